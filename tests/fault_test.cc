// Peers that vanish, over every transport: a client killed in the middle of a Put or a Get
// leaves no partial chunk, no leaked buffer and no stuck worker; a daemon killed and
// restarted under a connected client, or stopped while calls are in flight, never hangs
// that client. The client that gets killed is kvstash_fault_client (fault_client_main.cc).
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "tests/daemon_fixture.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

constexpr size_t kBigChunk = 64 * kMiB;

class FaultTest : public TransportFixture {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartDaemonOverParam()); }

  // Puts one pattern chunk and reads it back through a fresh connection.
  void ExpectRoundTrip(size_t size) {
    std::unique_ptr<Client> client = NewClient();
    ASSERT_NE(client, nullptr);
    auto ns = client->OpenNamespace(spec_);
    ASSERT_TRUE(ns.ok()) << ns.status();
    std::vector<Key128> keys = PutFresh(*client, *ns, rng_, 1, size, 1);
    ASSERT_EQ(keys.size(), 1u);
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(*client, *ns, keys[0], size, &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_EQ(FirstPatternMismatch(keys[0], buf.data(), size), -1);
  }

  Key128 PutPattern(size_t size) {
    std::vector<Key128> keys = PutFresh(*client_, ns_, rng_, 1, size, 1);
    return keys.empty() ? Key128{} : keys[0];
  }

  // Reads `key` back byte-exact through client_.
  void ExpectIntact(const Key128& key, size_t size) {
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(*client_, ns_, key, size, &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_EQ(item.size, size);
    EXPECT_EQ(FirstPatternMismatch(key, buf.data(), item.size), -1) << "a partial chunk";
  }

  absl::StatusOr<std::unique_ptr<Subprocess>> StartFaultClient(const std::string& mode,
                                                               const Key128& key, size_t size) {
    return Subprocess::Start({KVSTASH_FAULT_CLIENT_PATH, mode, TransportName(transport()),
                              AddressFor(*daemon_, transport()), spec_.model_id, KeyToHex(key),
                              absl::StrCat(size)});
  }

  // kill -9, then a new daemon on the same ports, as a supervisor would restart it;
  // client_ stays connected to the old one.
  void KillAndRestartOnSamePorts() {
    DaemonFixtureOptions options = options_;
    options.listen = daemon_->address();
    options.ucx_port = daemon_->ucx_port();
    options.retry_start_ms = 15000;  // a just-killed daemon's ports may not be free yet
    options.connect = false;
    daemon_->Kill();
    ASSERT_NO_FATAL_FAILURE(StartDaemon(options));
    ASSERT_EQ(daemon_->address(), options.listen);
    ASSERT_EQ(daemon_->ucx_port(), options.ucx_port);
  }

  std::mt19937_64 rng_{4242};
};

TEST_P(FaultTest, ClientKilledMidPutLeavesNoPartialChunk) {
  const ServerStats before = Stats();
  const Key128 key = RandomKey(rng_);
  auto child = StartFaultClient("put", key, kBigChunk);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->WaitForLine("ready", absl::Seconds(60)).ok()) << (*child)->output();
  // The daemon holds space for the chunk it is receiving.
  EXPECT_TRUE(PollUntil(
      [&] {
        return Stats().Of(ChunkTier::kDram).used_bytes > before.Of(ChunkTier::kDram).used_bytes;
      },
      absl::Seconds(20)))
      << "no space reserved for a put in progress";
  // Over gRPC the client sent only part of the payload; over shared memory the daemon may
  // have pulled all of it and stored the chunk complete.
  const bool may_complete = transport() != Transport::kGrpc;
  if (!may_complete) {
    EXPECT_FALSE(Present(key)) << "visible before it is complete";
  }

  const ExitInfo killed = (*child)->Kill();
  EXPECT_TRUE(killed.signaled) << killed.ToString();
  // Either the chunk is absent, or it is complete and byte-exact: never partial.
  if (may_complete && PollUntil([&] { return Present(key); }, absl::Seconds(1))) {
    ASSERT_NO_FATAL_FAILURE(ExpectIntact(key, kBigChunk));
    ASSERT_TRUE(client_->Delete(ns_, {key}).ok());
  }
  // Nothing stays reserved once the daemon noticed the dead peer.
  EXPECT_TRUE(PollUntil(
      [&] {
        return Stats().Of(ChunkTier::kDram).used_bytes == before.Of(ChunkTier::kDram).used_bytes;
      },
      absl::Seconds(30)))
      << "used " << Stats().Of(ChunkTier::kDram).used_bytes << " bytes, before "
      << before.Of(ChunkTier::kDram).used_bytes;
  EXPECT_FALSE(Present(key));
  const ServerStats after = Stats();
  EXPECT_EQ(after.chunks, before.chunks);
  EXPECT_EQ(after.bytes, before.bytes);
  if (!may_complete) {
    EXPECT_EQ(after.puts, before.puts);
  }
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(3 * kMiB + 7));  // the worker is not stuck

  // The same key can be written completely afterwards.
  Payload p;
  p.key = key;
  p.bytes = PatternBytes(key, 2 * kMiB);
  std::vector<PutItem> items = {p.AsPutItem()};
  ASSERT_TRUE(client_->Put(ns_, absl::MakeSpan(items)).ok());
  EXPECT_TRUE(items[0].status.ok()) << items[0].status;
  EXPECT_FALSE(items[0].already_present);
}

TEST_P(FaultTest, ClientKilledMidGetReleasesTheChunk) {
  const ServerStats empty = Stats();
  const Key128 key = PutPattern(kBigChunk);
  auto child = StartFaultClient("get", key, kBigChunk);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->WaitForLine("ready", absl::Seconds(60)).ok()) << (*child)->output();
  const ExitInfo killed = (*child)->Kill();
  EXPECT_TRUE(killed.signaled) << killed.ToString();

  // Still intact for others...
  ASSERT_NO_FATAL_FAILURE(ExpectIntact(key, kBigChunk));
  // ...and once deleted, its memory comes back: the dead reader held no reference.
  auto deleted = client_->Delete(ns_, {key});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 1u);
  EXPECT_TRUE(PollUntil(
      [&] {
        return Stats().Of(ChunkTier::kDram).used_bytes == empty.Of(ChunkTier::kDram).used_bytes;
      },
      absl::Seconds(30)))
      << "a dead client's Get still holds "
      << Stats().Of(ChunkTier::kDram).used_bytes - empty.Of(ChunkTier::kDram).used_bytes
      << " bytes";
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(5 * kMiB));  // the worker is not stuck
}

TEST_P(FaultTest, DaemonRestartUnderAConnectedClient) {
  const Key128 lost = PutPattern(256 * kKiB);
  ASSERT_TRUE(Present(lost));
  ASSERT_NO_FATAL_FAILURE(KillAndRestartOnSamePorts());

  // The old client reconnects, re-registers its namespace and retries without the caller
  // noticing. Bounded: a client that hangs here must fail the test, not stall the suite.
  auto p = std::make_shared<Payload>();
  p->key = RandomKey(rng_);
  p->bytes = PatternBytes(p->key, 2 * kMiB + 3);
  auto items = std::make_shared<std::vector<PutItem>>(1, p->AsPutItem());
  Client* client = client_.get();
  const NamespaceHandle ns = ns_;
  const absl::Status put =
      RunWithTimeout([client, ns, p, items] { return client->Put(ns, absl::MakeSpan(*items)); },
                     absl::Seconds(60));
  if (absl::IsDeadlineExceeded(put)) client_.release();  // still in use by the hung call
  ASSERT_TRUE(put.ok()) << put;
  ASSERT_TRUE((*items)[0].status.ok()) << (*items)[0].status;
  ASSERT_NO_FATAL_FAILURE(ExpectIntact(p->key, p->bytes.size()));
  auto hits = client_->Lookup(ns_, {p->key});
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 1u);
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*client_, ns_, lost, 256 * kKiB, &buf, &item).ok());
  EXPECT_EQ(item.status.code(), absl::StatusCode::kNotFound) << item.status;
}

TEST_P(FaultTest, DaemonRestartBeforeFirstCallAfterIt) {
  // As above, but the first call after the restart is a Get of a lost chunk.
  const Key128 lost = PutPattern(64 * kKiB);
  ASSERT_NO_FATAL_FAILURE(KillAndRestartOnSamePorts());
  std::vector<uint8_t> buf;
  GetItem item;
  const absl::Status get = GetOne(*client_, ns_, lost, 64 * kKiB, &buf, &item);
  ASSERT_TRUE(get.ok()) << get;
  EXPECT_EQ(item.status.code(), absl::StatusCode::kNotFound) << item.status;
}

// A daemon that stops responding (SIGSTOP) must not hang its clients past their deadline,
// even with a put's payload still queued in the connection.
TEST_P(FaultTest, CallsToAStalledDaemonEndAtTheirDeadline) {
  const Key128 stored = PutPattern(kMiB);
  ClientOptions options;
  options.deadline_ms = 1000;
  options.max_retries = 0;
  std::unique_ptr<Client> client = NewClient(options);
  ASSERT_NE(client, nullptr);
  auto ns = client->OpenNamespace(spec_);
  ASSERT_TRUE(ns.ok()) << ns.status();
  std::shared_ptr<Client> shared(std::move(client));
  ASSERT_TRUE(daemon_->Signal(SIGSTOP).ok());

  auto p = std::make_shared<Payload>();
  p->key = RandomKey(rng_);
  p->bytes = PatternBytes(p->key, 16 * kMiB);
  auto puts = std::make_shared<std::vector<PutItem>>(1, p->AsPutItem());
  const absl::Status put =
      RunWithTimeout([shared, ns = *ns, p, puts] { return shared->Put(ns, absl::MakeSpan(*puts)); },
                     absl::Seconds(30));
  EXPECT_TRUE(absl::IsDeadlineExceeded(put) || absl::IsUnavailable(put)) << put;
  EXPECT_FALSE(put.message().find("still running") != std::string::npos)
      << "Put did not return: " << put;

  auto buf = std::make_shared<std::vector<uint8_t>>(kMiB);
  auto gets = std::make_shared<std::vector<GetItem>>(1);
  (*gets)[0].key = stored;
  (*gets)[0].data = buf->data();
  (*gets)[0].capacity = buf->size();
  const absl::Status get = RunWithTimeout(
      [shared, ns = *ns, buf, gets] { return shared->Get(ns, absl::MakeSpan(*gets)); },
      absl::Seconds(30));
  EXPECT_TRUE(absl::IsDeadlineExceeded(get) || absl::IsUnavailable(get)) << get;
  EXPECT_FALSE(get.message().find("still running") != std::string::npos)
      << "Get did not return: " << get;

  ASSERT_TRUE(daemon_->Signal(SIGCONT).ok());
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(kMiB));
}

INSTANTIATE_TEST_SUITE_P(Transports, FaultTest, ::testing::ValuesIn(AllTransports()),
                         TransportTestName);

// gRPC only: a Get the client cancels after two frames of its stream.
class GrpcFaultTest : public DaemonFixture {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartDaemon({})); }
};

TEST_F(GrpcFaultTest, GetCancelledMidStream) {
  std::mt19937_64 rng(4242);
  const std::vector<Key128> keys = PutFresh(*client_, ns_, rng, 1, kBigChunk, 1);
  ASSERT_EQ(keys.size(), 1u);
  auto stub = RawStub(daemon_->address());
  auto ns = RawRegister(*stub, spec_);
  ASSERT_TRUE(ns.ok()) << ns.status();
  {
    grpc::ClientContext ctx;
    v1::GetRequest request;
    request.set_namespace_id(*ns);
    request.set_keys(KeyToBytes(keys[0]));
    auto reader = stub->Get(&ctx, request);
    v1::GetFrame frame;
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(reader->Read(&frame));
    ctx.TryCancel();
    while (reader->Read(&frame)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  ASSERT_TRUE(daemon_->Running());
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*client_, ns_, keys[0], kBigChunk, &buf, &item).ok());
  ASSERT_TRUE(item.status.ok()) << item.status;
  EXPECT_EQ(FirstPatternMismatch(keys[0], buf.data(), item.size), -1);
}

}  // namespace
}  // namespace kvstash::testing
