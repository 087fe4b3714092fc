// Faults on the UCX data plane, over TCP and over shared memory: a client killed in the
// middle of a Put or a Get leaves no partial chunk, no leaked buffer and no stuck worker;
// a client connected across a daemon restart carries on.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "tests/daemon_process.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

constexpr size_t kBigChunk = 64 * kMiB;

struct UcxCase {
  const char* name;
  const char* tls;
};

std::string CaseName(const ::testing::TestParamInfo<UcxCase>& info) { return info.param.name; }

class UcxFaultTest : public ::testing::TestWithParam<UcxCase> {
 protected:
  void SetUp() override {
    model_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_NO_FATAL_FAILURE(StartDaemon(0));
    ClientOptions options;
    options.ucx_tls = GetParam().tls;
    auto client = ConnectClient(daemon_->ucx_uri(), options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    auto ns = client_->OpenNamespace(TestNamespace(model_));
    ASSERT_TRUE(ns.ok()) << ns.status();
    ns_ = *ns;
  }

  // Starts the daemon; a non-zero `ucx_port` reuses that port (and `grpc` the gRPC one).
  void StartDaemon(int ucx_port, const std::string& grpc = "127.0.0.1:0") {
    DaemonOptions options;
    options.listen = grpc;
    options.set = {"storage.dram.capacity_bytes=256MiB", "storage.dram.prefault=false",
                   std::string("ucx.tls=") + GetParam().tls,
                   absl::StrCat("ucx.listen=127.0.0.1:", ucx_port)};
    options.retry_start_ms = 15000;  // a just-killed daemon's ports may not be free yet
    auto daemon = DaemonProcess::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon);
  }

  ServerStats Stats() {
    auto s = client_->Stats();
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : ServerStats{};
  }
  bool Present(const Key128& key) {
    auto e = client_->Exists(ns_, {key});
    return e.ok() && (*e)[0] != ChunkTier::kNone;
  }

  absl::StatusOr<std::unique_ptr<Subprocess>> StartFaultClient(const std::string& mode,
                                                               const Key128& key, size_t size) {
    return Subprocess::Start({KVSTASH_UCX_FAULT_CLIENT_PATH, mode, daemon_->ucx_address(),
                              GetParam().tls, model_, KeyToHex(key), absl::StrCat(size)});
  }

  void ExpectRoundTrip(size_t size) {
    std::vector<Key128> keys = PutFresh(*client_, ns_, rng_, 1, size, 1);
    ASSERT_EQ(keys.size(), 1u);
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(*client_, ns_, keys[0], size, &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_EQ(FirstPatternMismatch(keys[0], buf.data(), size), -1);
  }

  std::mt19937_64 rng_{99};
  std::string model_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<Client> client_;
  NamespaceHandle ns_;
};

TEST_P(UcxFaultTest, ClientKilledMidPutLeavesNoPartialChunk) {
  const ServerStats before = Stats();
  const Key128 key = RandomKey(rng_);
  auto child = StartFaultClient("put", key, kBigChunk);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->WaitForLine("ready", absl::Seconds(60)).ok()) << (*child)->output();
  // The daemon reserved space for the chunk (over shared memory it may even have pulled
  // the whole payload already, and stored it complete).
  EXPECT_TRUE(PollUntil([&] { return Stats().dram_used_bytes > before.dram_used_bytes; },
                        absl::Seconds(20)))
      << "no space reserved for a put in progress";
  const ExitInfo killed = (*child)->Kill();
  EXPECT_TRUE(killed.signaled) << killed.ToString();

  // Either the chunk is absent, or it is complete and byte-exact: never partial.
  if (PollUntil([&] { return Present(key); }, absl::Seconds(1))) {
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(*client_, ns_, key, kBigChunk, &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_EQ(FirstPatternMismatch(key, buf.data(), kBigChunk), -1) << "a partial chunk";
    ASSERT_TRUE(client_->Delete(ns_, {key}).ok());
  }
  // Nothing stays reserved once the daemon noticed the dead peer.
  EXPECT_TRUE(PollUntil([&] { return Stats().dram_used_bytes == before.dram_used_bytes; },
                        absl::Seconds(30)))
      << "used " << Stats().dram_used_bytes << " bytes, before " << before.dram_used_bytes;
  EXPECT_FALSE(Present(key));
  EXPECT_EQ(Stats().chunks, before.chunks);
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(3 * kMiB + 7));  // the worker is not stuck
}

TEST_P(UcxFaultTest, ClientKilledMidGetReleasesTheChunk) {
  const ServerStats empty = Stats();
  std::vector<Key128> keys = PutFresh(*client_, ns_, rng_, 1, kBigChunk, 1);
  ASSERT_EQ(keys.size(), 1u);
  auto child = StartFaultClient("get", keys[0], kBigChunk);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->WaitForLine("ready", absl::Seconds(60)).ok()) << (*child)->output();
  const ExitInfo killed = (*child)->Kill();
  EXPECT_TRUE(killed.signaled) << killed.ToString();
  // Deleting frees the memory only once no send holds the chunk any more.
  ASSERT_TRUE(client_->Delete(ns_, keys).ok());
  EXPECT_TRUE(PollUntil([&] { return Stats().dram_used_bytes == empty.dram_used_bytes; },
                        absl::Seconds(30)))
      << "a dead client's Get still holds " << Stats().dram_used_bytes - empty.dram_used_bytes
      << " bytes";
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(5 * kMiB));
}

TEST_P(UcxFaultTest, DaemonRestartUnderAConnectedClient) {
  std::vector<Key128> lost = PutFresh(*client_, ns_, rng_, 1, 256 * kKiB, 1);
  const int ucx_port = daemon_->ucx_port();
  const std::string grpc = daemon_->address();
  daemon_->Kill();
  ASSERT_NO_FATAL_FAILURE(StartDaemon(ucx_port, grpc));
  ASSERT_EQ(daemon_->ucx_port(), ucx_port);

  // The old client reconnects, re-registers its namespace and retries. Bounded: a client
  // that hangs here must fail the test, not stall the suite.
  auto p = std::make_shared<Payload>();
  p->key = RandomKey(rng_);
  p->bytes = PatternBytes(p->key, 2 * kMiB + 3);
  auto items = std::make_shared<std::vector<PutItem>>(1, p->AsPutItem());
  Client* client = client_.get();
  const NamespaceHandle ns = ns_;
  const absl::Status put = RunWithTimeout(
      [client, ns, p, items] { return client->Put(ns, absl::MakeSpan(*items)); },
      absl::Seconds(60));
  if (absl::IsDeadlineExceeded(put)) client_.release();  // still in use by the hung call
  ASSERT_TRUE(put.ok()) << put;
  ASSERT_TRUE((*items)[0].status.ok()) << (*items)[0].status;
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*client_, ns_, p->key, p->bytes.size(), &buf, &item).ok());
  ASSERT_TRUE(item.status.ok()) << item.status;
  EXPECT_TRUE(buf == p->bytes);
  ASSERT_TRUE(GetOne(*client_, ns_, lost[0], 256 * kKiB, &buf, &item).ok());
  EXPECT_EQ(item.status.code(), absl::StatusCode::kNotFound) << item.status;
}

INSTANTIATE_TEST_SUITE_P(Transports, UcxFaultTest,
                         ::testing::Values(UcxCase{"tcp", "tcp"}, UcxCase{"shm", "sm,self"}),
                         CaseName);

}  // namespace
}  // namespace kvstash::testing
