// Peers that vanish: a client killed in the middle of a Put or a Get, a Get cancelled
// mid-stream, and a daemon killed and restarted under a connected client.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "tests/daemon_process.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

constexpr size_t kBigChunk = 64 * kMiB;

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    DaemonOptions options;
    options.set = {"storage.dram.capacity_bytes=256MiB"};
    auto daemon = DaemonProcess::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon);
    ASSERT_NO_FATAL_FAILURE(Reconnect());
  }

  void Reconnect() {
    auto client = ConnectClient(daemon_->uri());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    auto ns = client_->OpenNamespace(TestNamespace(model_));
    ASSERT_TRUE(ns.ok()) << ns.status();
    ns_ = *ns;
  }

  ServerStats Stats() {
    auto stats = client_->Stats();
    EXPECT_TRUE(stats.ok()) << stats.status();
    return stats.ok() ? *stats : ServerStats();
  }

  bool Present(const Key128& key) {
    auto present = client_->Exists(ns_, {key});
    EXPECT_TRUE(present.ok()) << present.status();
    return present.ok() && (*present)[0] != ChunkTier::kNone;
  }

  // Puts one pattern chunk and reads it back through a fresh connection.
  void ExpectRoundTrip(size_t size) {
    auto client = ConnectClient(daemon_->uri());
    ASSERT_TRUE(client.ok()) << client.status();
    auto ns = (*client)->OpenNamespace(TestNamespace(model_));
    ASSERT_TRUE(ns.ok()) << ns.status();
    Payload p;
    p.key = RandomKey(rng_);
    p.bytes = PatternBytes(p.key, size);
    ASSERT_TRUE(PutAll(**client, *ns, {p}).ok());
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(**client, *ns, p.key, size, &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_TRUE(buf == p.bytes);
  }

  Key128 PutPattern(size_t size) {
    Payload p;
    p.key = RandomKey(rng_);
    p.bytes = PatternBytes(p.key, size);
    EXPECT_TRUE(PutAll(*client_, ns_, {p}).ok());
    return p.key;
  }

  absl::StatusOr<std::unique_ptr<Subprocess>> StartFaultClient(std::vector<std::string> args) {
    std::vector<std::string> argv = {KVSTASH_FAULT_CLIENT_PATH, args[0], daemon_->address(),
                                     model_};
    argv.insert(argv.end(), args.begin() + 1, args.end());
    return Subprocess::Start(argv);
  }

  std::mt19937_64 rng_{4242};
  std::string model_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<Client> client_;
  NamespaceHandle ns_;
};

TEST_F(FaultTest, ClientKilledMidPutLeavesNoTrace) {
  const ServerStats before = Stats();
  const Key128 key = RandomKey(rng_);
  auto child =
      StartFaultClient({"put", KeyToHex(key), absl::StrCat(kBigChunk), absl::StrCat(8 * kMiB)});
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->WaitForLine("ready", absl::Seconds(30)).ok()) << (*child)->output();
  // The daemon holds space for the chunk it is receiving.
  EXPECT_TRUE(PollUntil([&] { return Stats().dram_used_bytes > before.dram_used_bytes; },
                        absl::Seconds(10)))
      << "no space reserved for a put in progress";
  EXPECT_FALSE(Present(key)) << "a chunk must not be visible before it is complete";

  const ExitInfo killed = (*child)->Kill();
  EXPECT_TRUE(killed.signaled) << killed.ToString();
  // Once the daemon notices the broken stream, the reservation is given back.
  EXPECT_TRUE(PollUntil([&] { return Stats().dram_used_bytes == before.dram_used_bytes; },
                        absl::Seconds(20)))
      << "used " << Stats().dram_used_bytes << " bytes, before " << before.dram_used_bytes;
  EXPECT_FALSE(Present(key));
  const ServerStats after = Stats();
  EXPECT_EQ(after.chunks, before.chunks);
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(after.puts, before.puts);
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(3 * kMiB + 7));

  // The same key can be written completely afterwards.
  Payload p;
  p.key = key;
  p.bytes = PatternBytes(key, 2 * kMiB);
  std::vector<PutItem> items = {p.AsPutItem()};
  ASSERT_TRUE(client_->Put(ns_, absl::MakeSpan(items)).ok());
  EXPECT_TRUE(items[0].status.ok()) << items[0].status;
  EXPECT_FALSE(items[0].already_present);
}

TEST_F(FaultTest, ClientKilledMidGetReleasesTheChunk) {
  const ServerStats empty = Stats();
  const Key128 key = PutPattern(kBigChunk);
  auto child = StartFaultClient({"get", KeyToHex(key), "3"});
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->WaitForLine("ready", absl::Seconds(30)).ok()) << (*child)->output();
  (*child)->Kill();
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(kMiB));

  // Still intact for others...
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*client_, ns_, key, kBigChunk, &buf, &item).ok());
  ASSERT_TRUE(item.status.ok()) << item.status;
  EXPECT_EQ(FirstPatternMismatch(key, buf.data(), item.size), -1);
  // ...and once deleted, its memory comes back: the dead reader held no reference.
  auto deleted = client_->Delete(ns_, {key});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 1u);
  EXPECT_TRUE(PollUntil([&] { return Stats().dram_used_bytes < empty.dram_used_bytes + kMiB * 2; },
                        absl::Seconds(20)))
      << "used " << Stats().dram_used_bytes << " bytes, empty " << empty.dram_used_bytes;
}

TEST_F(FaultTest, GetCancelledMidStream) {
  const Key128 key = PutPattern(kBigChunk);
  auto stub = RawStub(daemon_->address());
  auto ns = RawRegister(*stub, TestNamespace(model_));
  ASSERT_TRUE(ns.ok()) << ns.status();
  {
    grpc::ClientContext ctx;
    v1::GetRequest request;
    request.set_namespace_id(*ns);
    request.set_keys(KeyBytes(key));
    auto reader = stub->Get(&ctx, request);
    v1::GetFrame frame;
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(reader->Read(&frame));
    ctx.TryCancel();
    while (reader->Read(&frame)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  ASSERT_TRUE(daemon_->Running());
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(kMiB));
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*client_, ns_, key, kBigChunk, &buf, &item).ok());
  ASSERT_TRUE(item.status.ok()) << item.status;
  EXPECT_EQ(FirstPatternMismatch(key, buf.data(), item.size), -1);
}

// kill -9, then a new daemon on the same port, as a supervisor would restart it.
void KillAndRestartOnSamePort(std::unique_ptr<DaemonProcess>* daemon) {
  const int port = (*daemon)->port();
  (*daemon)->Kill();
  DaemonOptions options;
  options.listen = absl::StrCat("127.0.0.1:", port);
  options.retry_start_ms = 15000;
  auto restarted = DaemonProcess::Start(options);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  ASSERT_EQ((*restarted)->port(), port);
  *daemon = std::move(*restarted);
}

TEST_F(FaultTest, DaemonRestartUnderAConnectedClient) {
  const Key128 before = PutPattern(256 * kKiB);
  ASSERT_TRUE(Present(before));
  ASSERT_NO_FATAL_FAILURE(KillAndRestartOnSamePort(&daemon_));

  // The old client re-registers its namespace and retries without the caller noticing.
  // Bounded: a client that hangs here must fail the test, not stall the suite.
  auto p = std::make_shared<Payload>();
  p->key = RandomKey(rng_);
  p->bytes = PatternBytes(p->key, 2 * kMiB + 3);
  auto items = std::make_shared<std::vector<PutItem>>(1, p->AsPutItem());
  Client* client = client_.get();
  const NamespaceHandle ns = ns_;
  const absl::Status put =
      RunWithTimeout([client, ns, p, items] { return client->Put(ns, absl::MakeSpan(*items)); },
                     absl::Seconds(30));
  if (absl::IsDeadlineExceeded(put)) client_.release();  // still in use by the hung call
  ASSERT_TRUE(put.ok()) << put;
  ASSERT_TRUE((*items)[0].status.ok()) << (*items)[0].status;
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*client_, ns_, p->key, p->bytes.size(), &buf, &item).ok());
  ASSERT_TRUE(item.status.ok()) << item.status;
  EXPECT_TRUE(buf == p->bytes);
  auto hits = client_->Lookup(ns_, {p->key});
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 1u);
}

TEST_F(FaultTest, DaemonRestartBeforeFirstCallAfterIt) {
  // Same as above, but the first call after the restart is a Get of a lost chunk.
  const Key128 lost = PutPattern(64 * kKiB);
  ASSERT_NO_FATAL_FAILURE(KillAndRestartOnSamePort(&daemon_));
  std::vector<uint8_t> buf;
  GetItem item;
  const absl::Status get = GetOne(*client_, ns_, lost, 64 * kKiB, &buf, &item);
  ASSERT_TRUE(get.ok()) << get;
  EXPECT_EQ(item.status.code(), absl::StatusCode::kNotFound) << item.status;
}

// A daemon that stops responding (SIGSTOP) must not hang its clients past their deadline,
// even with a put's payload still queued in the connection.
TEST_F(FaultTest, CallsToAStalledDaemonEndAtTheirDeadline) {
  const Key128 stored = PutPattern(kMiB);
  ClientOptions options;
  options.deadline_ms = 1000;
  options.max_retries = 0;
  auto client = ConnectClient(daemon_->uri(), options);
  ASSERT_TRUE(client.ok()) << client.status();
  auto ns = (*client)->OpenNamespace(TestNamespace(model_));
  ASSERT_TRUE(ns.ok()) << ns.status();
  std::shared_ptr<Client> shared(std::move(*client));
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

}  // namespace
}  // namespace kvstash::testing
