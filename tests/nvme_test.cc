// The NVMe tier against a real kvstashd (32 MiB DRAM, 256 MiB RocksDB budget in the test's
// own data directory): demotion and byte-exact reads from NVMe, promotion, recovery after
// kill -9 with write-through, corrupt blob files read as misses, and a full filesystem
// (DRAM keeps serving; NVMe writing resumes once space is back).
// Every chunk's bytes derive from its key (PatternBytes), so any chunk served is checked.
#include <grpcpp/grpcpp.h>
#include <sys/mount.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "testing/temp_dir.h"
#include "tests/daemon_fixture.h"
#include "tests/daemon_process.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

namespace fs = std::filesystem;

class NvmeTest : public DaemonFixture {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-nvme");
    ASSERT_TRUE(dir.ok()) << dir.status();
    temp_dir_ = *std::move(dir);
    data_dir_ = temp_dir_->path();
  }
  void TearDown() override {
    client_.reset();
    daemon_.reset();
    if (!mount_point_.empty()) umount2(mount_point_.c_str(), MNT_DETACH);
    temp_dir_.reset();
  }

  // Starts (or restarts) the daemon on data_dir_ with the NVMe tier on and `sets` on top.
  void StartDaemon(std::vector<std::string> sets = {}) {
    client_.reset();
    DaemonFixtureOptions options;
    options.set = {"storage.dram.capacity_bytes=32MiB", "storage.dram.page_bytes=1MiB",
                   "storage.nvme.enabled=true", "storage.nvme.capacity_bytes=256MiB",
                   "data_dir=" + data_dir_};
    options.set.insert(options.set.end(), sets.begin(), sets.end());
    options.spec = TestNamespace("nvme");
    ASSERT_NO_FATAL_FAILURE(DaemonFixture::StartDaemon(options));
  }

  // Puts `count` fresh pattern chunks of `size` bytes, `batch` per call; returns the keys.
  std::vector<Key128> PutFresh(int count, size_t size, int batch = 4) {
    return kvstash::testing::PutFresh(*client_, ns_, rng_, count, size, batch);
  }

  // Waits until the demotion queue is empty, so tiers no longer change on their own.
  void AwaitDemotions() {
    EXPECT_TRUE(PollUntil([&] { return Stats().demotions_pending == 0; }, absl::Seconds(60)));
  }

  std::vector<ChunkTier> Tiers(const std::vector<Key128>& keys) {
    auto tiers = client_->Exists(ns_, keys);
    EXPECT_TRUE(tiers.ok()) << tiers.status();
    return tiers.ok() ? *tiers : std::vector<ChunkTier>(keys.size(), ChunkTier::kNone);
  }

  // Where each of `keys` is (D: DRAM, N: NVMe, -: nowhere) and the counters that explain
  // it, for failure messages.
  std::string Describe(const std::vector<Key128>& keys, const ServerStats& s) {
    std::string where;
    for (ChunkTier tier : Tiers(keys)) {
      where += tier == ChunkTier::kDram ? 'D' : tier == ChunkTier::kNvme ? 'N' : '-';
    }
    return absl::StrCat("tiers ", where, "; evictions ", s.evictions, ", demotions ", s.demotions,
                        ", demotion drops ", s.demotion_drops, ", failures ", s.demotion_failures,
                        ", write-throughs ", s.write_throughs, ", nvme errors ", s.nvme_io_errors,
                        ", dram used ", s.Of(ChunkTier::kDram).used_bytes);
  }

  // Gets `key`: OK with the exact pattern bytes, or NOT_FOUND. Anything else fails the test.
  // Returns whether the chunk was served.
  bool GetExactOrMiss(const Key128& key, size_t size) {
    std::vector<uint8_t> buf;
    GetItem item;
    absl::Status call = GetOne(*client_, ns_, key, size, &buf, &item);
    EXPECT_TRUE(call.ok()) << call;
    if (absl::IsNotFound(item.status)) return false;
    EXPECT_TRUE(item.status.ok()) << item.status;
    if (!item.status.ok()) return false;
    EXPECT_EQ(item.size, size);
    EXPECT_EQ(FirstPatternMismatch(key, buf.data(), item.size), -1) << "wrong bytes served";
    return true;
  }

  // One Get mixing NVMe, DRAM and missing keys through `client`, checked item by item.
  void ExpectMixedBatchExact(Client& client);

  // Mounts a 64 MiB tmpfs at mount_point_ (TearDown unmounts it). Returns why it could
  // not (mounting needs root), or "".
  std::string MountSmallFilesystem() {
    mount_point_ = data_dir_ + "/small";
    fs::create_directories(mount_point_);
    if (mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, "size=64m") == 0) return "";
    const std::string reason = strerror(errno);
    mount_point_.clear();
    return "cannot mount a 64 MiB tmpfs (" + reason + "); needs root";
  }

  std::mt19937_64 rng_{4242};
  std::unique_ptr<TempDir> temp_dir_;
  std::string data_dir_;
  std::string mount_point_;  // a tmpfs this test mounted, unmounted in TearDown
};

TEST_F(NvmeTest, DemotesBeyondDramAndServesFromNvmeByteExact) {
  // Back-pressure instead of the default drop, so every evicted chunk must reach NVMe; no
  // cleaner, so every eviction is a demotion (with it, a cleaner that keeps ahead of the
  // puts leaves nothing to demote).
  ASSERT_NO_FATAL_FAILURE(
      StartDaemon({"storage.nvme.promote_on_hit=false", "storage.nvme.demotion_wait_ms=600000",
                   "storage.nvme.clean_window_percent=0"}));
  const std::vector<Key128> keys = PutFresh(96, kMiB);  // 3x the DRAM budget
  AwaitDemotions();
  const ServerStats stats = Stats();
  EXPECT_GT(stats.demotions, 0u);
  EXPECT_EQ(stats.nvme_io_errors, 0u);
  EXPECT_EQ(stats.Of(ChunkTier::kNvme).capacity_bytes, 256u * kMiB);

  const std::vector<ChunkTier> tiers = Tiers(keys);
  std::vector<Key128> on_nvme;
  uint64_t present = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (tiers[i] == ChunkTier::kNvme) on_nvme.push_back(keys[i]);
    present += tiers[i] != ChunkTier::kNone;
  }
  ASSERT_FALSE(on_nvme.empty());
  EXPECT_EQ(stats.Of(ChunkTier::kNvme).chunks, on_nvme.size());
  // The NVMe budget holds everything, and puts wait for a full demotion queue instead of
  // dropping: every chunk is still there.
  EXPECT_EQ(stats.demotion_drops, 0u);
  EXPECT_EQ(present, keys.size());

  for (const Key128& key : on_nvme) EXPECT_TRUE(GetExactOrMiss(key, kMiB));
  EXPECT_GE(Stats().nvme_hits, on_nvme.size());
  EXPECT_EQ(Tiers({on_nvme[0]})[0], ChunkTier::kNvme) << "promote_on_hit=false promoted";
  auto lookup = client_->Lookup(ns_, {on_nvme[0]});
  ASSERT_TRUE(lookup.ok()) << lookup.status();
  ASSERT_EQ(lookup->hit_count, 1u);
  EXPECT_EQ(lookup->tiers[0], ChunkTier::kNvme);
}

// One Get of chunks on NVMe, chunks in DRAM and a missing key through `client` (gRPC or
// UCX): NVMe reads run on the daemon's read threads (gRPC reads the next key ahead while it
// sends the current one; UCX answers items in any order through the worker's mailbox);
// every item must arrive byte-exact under its own index.
void NvmeTest::ExpectMixedBatchExact(Client& client) {
  std::vector<Key128> keys = PutFresh(64, kMiB);  // twice the DRAM budget
  AwaitDemotions();
  const std::vector<ChunkTier> tiers = Tiers(keys);
  const auto on_nvme = std::count(tiers.begin(), tiers.end(), ChunkTier::kNvme);
  ASSERT_GT(on_nvme, 0);
  ASSERT_GT(std::count(tiers.begin(), tiers.end(), ChunkTier::kDram), 0);
  const uint64_t hits_before = Stats().nvme_hits;

  auto ns = client.OpenNamespace(TestNamespace("nvme"));
  ASSERT_TRUE(ns.ok()) << ns.status();
  keys.insert(keys.begin() + static_cast<std::ptrdiff_t>(keys.size() / 2),
              RandomKey(rng_));  // never put
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  ASSERT_TRUE(GetMany(client, *ns, keys, kMiB, &bufs, &items).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i == keys.size() / 2) {
      EXPECT_TRUE(absl::IsNotFound(items[i].status)) << items[i].status;
      continue;
    }
    ASSERT_TRUE(items[i].status.ok()) << i << ": " << items[i].status;
    EXPECT_EQ(items[i].size, kMiB);
    EXPECT_EQ(FirstPatternMismatch(keys[i], bufs[i].data(), items[i].size), -1) << i;
  }
  EXPECT_EQ(Stats().nvme_hits, hits_before + static_cast<uint64_t>(on_nvme));
}

TEST_F(NvmeTest, GrpcGetServesNvmeAndDramChunksInOneBatch) {
  ASSERT_NO_FATAL_FAILURE(
      StartDaemon({"storage.nvme.promote_on_hit=false", "storage.nvme.demotion_wait_ms=600000"}));
  ExpectMixedBatchExact(*client_);
}

TEST_F(NvmeTest, UcxGetServesNvmeAndDramChunksInOneBatch) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"storage.nvme.promote_on_hit=false",
                                       "storage.nvme.demotion_wait_ms=600000", "ucx.tls=tcp"}));
  ClientOptions options;
  options.ucx_tls = "tcp";
  auto ucx = ConnectClient(daemon_->ucx_uri(), options);
  ASSERT_TRUE(ucx.ok()) << ucx.status();
  ExpectMixedBatchExact(**ucx);
}

// gRPC Gets of many NVMe chunks cancelled after the first frame, while the next chunk is
// being read ahead: the daemon frees each call once its read returns (the sanitizer builds
// catch a reactor freed under its read), releases the chunks, and keeps serving.
TEST_F(NvmeTest, GrpcGetCancelledWhileReadingAhead) {
  ASSERT_NO_FATAL_FAILURE(
      StartDaemon({"storage.nvme.promote_on_hit=false", "storage.nvme.demotion_wait_ms=600000",
                   "storage.nvme.clean_window_percent=0"}));
  const std::vector<Key128> keys = PutFresh(64, kMiB);
  AwaitDemotions();
  std::string batch;
  for (const Key128& key : keys) batch += KeyToBytes(key);
  auto stub = RawStub(daemon_->address());
  auto ns = RawRegister(*stub, TestNamespace("nvme"));
  ASSERT_TRUE(ns.ok()) << ns.status();
  for (int round = 0; round < 8; ++round) {
    grpc::ClientContext ctx;
    v1::GetRequest request;
    request.set_namespace_id(*ns);
    request.set_keys(batch);
    auto reader = stub->Get(&ctx, request);
    v1::GetFrame frame;
    ASSERT_TRUE(reader->Read(&frame));
    ctx.TryCancel();
    while (reader->Read(&frame)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  ASSERT_TRUE(daemon_->Running());
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  ASSERT_TRUE(GetMany(*client_, ns_, keys, kMiB, &bufs, &items).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(items[i].status.ok()) << i << ": " << items[i].status;
    EXPECT_EQ(FirstPatternMismatch(keys[i], bufs[i].data(), items[i].size), -1) << i;
  }
}

// Churn through an NVMe budget of 16 MiB: the tier evicts, blob garbage collection runs and
// Stats reports it (the same counters as kvstash_gc_runs_total / kvstash_gc_waits_total).
TEST_F(NvmeTest, StatsReportGarbageCollectionUnderChurn) {
  ASSERT_NO_FATAL_FAILURE(
      StartDaemon({"storage.nvme.capacity_bytes=16MiB", "storage.nvme.demotion_wait_ms=600000",
                   "storage.nvme.clean_window_percent=0"}));
  PutFresh(96, kMiB);  // 64 MiB of demotions through a 16 MiB budget
  AwaitDemotions();
  EXPECT_GT(Stats().nvme_evictions, 0u);
  EXPECT_TRUE(PollUntil([&] { return Stats().nvme_gc_runs > 0; }, absl::Seconds(60)))
      << "no garbage collection reported after the tier evicted";
  EXPECT_EQ(Stats().nvme_io_errors, 0u);
}

TEST_F(NvmeTest, GetPromotesAnNvmeHitIntoDram) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  const std::vector<Key128> keys = PutFresh(64, kMiB);
  AwaitDemotions();
  const std::vector<ChunkTier> tiers = Tiers(keys);
  size_t first_nvme = keys.size();
  for (size_t i = 0; i < keys.size() && first_nvme == keys.size(); ++i) {
    if (tiers[i] == ChunkTier::kNvme) first_nvme = i;
  }
  ASSERT_LT(first_nvme, keys.size()) << "nothing was demoted";
  const uint64_t promotions = Stats().promotions;
  EXPECT_TRUE(GetExactOrMiss(keys[first_nvme], kMiB));
  EXPECT_EQ(Stats().promotions, promotions + 1);
  EXPECT_EQ(Tiers({keys[first_nvme]})[0], ChunkTier::kDram);
  EXPECT_TRUE(GetExactOrMiss(keys[first_nvme], kMiB));
}

// Puts chunks one per call until told to stop or a put fails; records every acknowledged
// key. Runs on its own thread while the daemon is killed under it.
class Putter {
 public:
  Putter(Client* client, NamespaceHandle ns, size_t size) : client_(client), ns_(ns), size_(size) {
    thread_ = std::thread([this] { Run(); });
  }
  ~Putter() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  size_t acked_count() {
    absl::MutexLock lock(&mu_);
    return acked_.size();
  }
  std::vector<Key128> acked() {
    absl::MutexLock lock(&mu_);
    return acked_;
  }
  std::vector<Key128> attempted() {
    absl::MutexLock lock(&mu_);
    return attempted_;
  }

 private:
  void Run() {
    std::mt19937_64 rng(99);
    while (!stop_.load()) {
      Payload p;
      p.key = RandomKey(rng);
      p.bytes = PatternBytes(p.key, size_);
      p.tokens = 16;
      {
        absl::MutexLock lock(&mu_);
        attempted_.push_back(p.key);
      }
      if (!PutAll(*client_, ns_, {p}).ok()) return;
      absl::MutexLock lock(&mu_);
      acked_.push_back(p.key);
    }
  }

  Client* const client_;
  const NamespaceHandle ns_;
  const size_t size_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::vector<Key128> acked_ ABSL_GUARDED_BY(mu_);
  std::vector<Key128> attempted_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts once the members above exist
};

TEST_F(NvmeTest, WriteThroughPutsSurviveKillDashNine) {
  constexpr size_t kChunk = 256 * kKiB;
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"storage.nvme.write_through=true"}));
  std::vector<Key128> acked, attempted;
  {
    Putter putter(client_.get(), ns_, kChunk);
    // 300 x 256 KiB is more than twice the DRAM budget, so DRAM evicts meanwhile too.
    ASSERT_TRUE(PollUntil([&] { return putter.acked_count() >= 300; }, absl::Seconds(120)));
    daemon_->Kill();  // SIGKILL while puts are in flight
    putter.Stop();
    acked = putter.acked();
    attempted = putter.attempted();
  }
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"storage.nvme.write_through=true"}));
  EXPECT_GE(Stats().recovered_chunks, acked.size());
  for (const Key128& key : acked) {
    EXPECT_TRUE(GetExactOrMiss(key, kChunk)) << "an acknowledged write-through put was lost";
  }
  // Puts in flight at the kill may or may not have survived, but never with wrong bytes.
  for (size_t i = acked.size(); i < attempted.size(); ++i) GetExactOrMiss(attempted[i], kChunk);
  EXPECT_EQ(Stats().checksum_failures, 0u);
}

// Flips bytes every `stride` bytes of every blob file under `dir`; returns files changed.
int CorruptBlobFiles(const std::string& dir, size_t stride) {
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() != ".blob") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    const size_t size = fs::file_size(e.path());
    for (size_t off = stride / 2; off + 64 < size; off += stride) {
      f.seekp(static_cast<std::streamoff>(off));
      f.write("\xde\xad\xbe\xef", 4);
    }
    files += f.good() ? 1 : 0;
  }
  return files;
}

TEST_F(NvmeTest, CorruptBlobFilesReadAsMissesNeverBadBytes) {
  constexpr size_t kChunk = 256 * kKiB;
  ASSERT_NO_FATAL_FAILURE(StartDaemon({"storage.nvme.write_through=true"}));
  const std::vector<Key128> keys = PutFresh(24, kChunk);
  ASSERT_TRUE(daemon_->Signal(SIGTERM).ok());
  ASSERT_TRUE(daemon_->WaitExit(absl::Seconds(60)).ok());
  ASSERT_GT(CorruptBlobFiles(data_dir_ + "/nvme", 64 * kKiB), 0) << "no blob files found";

  ASSERT_NO_FATAL_FAILURE(StartDaemon());
  EXPECT_EQ(Stats().recovered_chunks, keys.size());
  uint64_t misses = 0;
  for (const Key128& key : keys) misses += GetExactOrMiss(key, kChunk) ? 0 : 1;
  EXPECT_GT(misses, 0u);
  const ServerStats stats = Stats();
  EXPECT_GT(stats.checksum_failures, 0u);
  EXPECT_GE(stats.checksum_failures + stats.nvme_io_errors, misses);
  // A failed chunk was deleted: it stays a miss.
  for (const Key128& key : keys) GetExactOrMiss(key, kChunk);
  EXPECT_EQ(Stats().checksum_failures, stats.checksum_failures);
}

TEST_F(NvmeTest, FullFilesystemKeepsDramServing) {
  if (std::string why = MountSmallFilesystem(); !why.empty()) GTEST_SKIP() << why;
  // A 256 MiB budget on a 64 MiB filesystem: the disk fills long before the budget does.
  ASSERT_NO_FATAL_FAILURE(StartDaemon(
      {"storage.nvme.path=" + mount_point_ + "/nvme", "storage.nvme.write_through=true"}));
  const std::vector<Key128> keys = PutFresh(160, kMiB);
  AwaitDemotions();
  const ServerStats stats = Stats();
  EXPECT_EQ(stats.puts, keys.size()) << "puts must keep succeeding in DRAM";
  EXPECT_GT(stats.nvme_io_errors, 0u);
  EXPECT_TRUE(daemon_->Running());
  // The newest chunks are in DRAM. (Checked first: gets of older chunks promote them from
  // NVMe and evict these, whose demotion then fails on the full disk.)
  for (size_t i = keys.size() - 8; i < keys.size(); ++i) {
    EXPECT_TRUE(GetExactOrMiss(keys[i], kMiB)) << "chunk " << i << "; " << Describe(keys, stats);
  }
  int served = 0;
  for (const Key128& key : keys) served += GetExactOrMiss(key, kMiB) ? 1 : 0;
  EXPECT_GE(served, 8);
  auto health = client_->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_TRUE(health->serving);
}

TEST_F(NvmeTest, NvmeWritingResumesOnceSpaceIsBack) {
  if (std::string why = MountSmallFilesystem(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_NO_FATAL_FAILURE(StartDaemon(
      {"storage.nvme.path=" + mount_point_ + "/nvme", "storage.nvme.write_through=true"}));
  // Fill the filesystem from outside the daemon, then put: DRAM takes the puts, NVMe
  // refuses them (counted), the daemon keeps serving.
  const std::string filler = mount_point_ + "/filler";
  {
    std::ofstream f(filler, std::ios::binary);
    const std::string block(kMiB, 'f');
    while (f.write(block.data(), block.size())) f.flush();
  }
  const std::vector<Key128> refused = PutFresh(4, kMiB);
  ServerStats stats = Stats();
  EXPECT_EQ(stats.puts, refused.size());
  EXPECT_GT(stats.nvme_io_errors, 0u);
  const uint64_t on_nvme = stats.Of(ChunkTier::kNvme).chunks;
  for (const Key128& key : refused) EXPECT_TRUE(GetExactOrMiss(key, kMiB));
  // Space comes back: write-through puts reach NVMe again without a restart.
  fs::remove(filler);
  std::vector<Key128> later;
  EXPECT_TRUE(PollUntil(
      [&] {
        std::vector<Key128> keys = PutFresh(1, kMiB);
        later.insert(later.end(), keys.begin(), keys.end());
        return Stats().Of(ChunkTier::kNvme).chunks > on_nvme;
      },
      absl::Seconds(60)))
      << "NVMe writing did not resume";
  EXPECT_TRUE(daemon_->Running());
  for (const Key128& key : later) EXPECT_TRUE(GetExactOrMiss(key, kMiB));
}

}  // namespace
}  // namespace kvstash::testing
