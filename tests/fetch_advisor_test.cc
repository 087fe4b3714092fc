// Fetch or recompute against a real kvstashd whose NVMe reads are throttled
// (storage.nvme.read_bytes_per_s): the fetch times a client observes from the slow tier
// turn FetchAdvisor's answer for that tier from fetch to recompute, while DRAM hits are
// still fetched. The daemon's throttle makes every read wait at least its size / rate, so
// the observed bandwidth is bounded by construction; no test here depends on the host's
// speed.
#include "kvstash/fetch_advisor.h"

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "testing/temp_dir.h"
#include "tests/daemon_fixture.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr uint64_t kReadBytesPerS = 8 << 20;
constexpr uint64_t kKvBytesPerToken = 128 << 10;  // Llama-3-8B fp16: 8 tokens per chunk
constexpr uint64_t kChunkTokens = kChunkBytes / kKvBytesPerToken;

class ThrottledNvmeTest : public DaemonFixture {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-fetch");
    ASSERT_TRUE(dir.ok()) << dir.status();
    temp_dir_ = *std::move(dir);
    DaemonFixtureOptions options;
    // Hits stay on NVMe (no promotion), read at kReadBytesPerS.
    options.set = {"storage.dram.capacity_bytes=32MiB",
                   "storage.nvme.enabled=true",
                   "storage.nvme.capacity_bytes=256MiB",
                   "storage.nvme.promote_on_hit=false",
                   absl::StrCat("storage.nvme.read_bytes_per_s=", kReadBytesPerS),
                   "data_dir=" + temp_dir_->path()};
    options.spec = TestNamespace("fetch-advisor");
    ASSERT_NO_FATAL_FAILURE(StartDaemon(options));
  }
  void TearDown() override {
    client_.reset();
    daemon_.reset();
    temp_dir_.reset();
  }

  // Keys of `count` chunks now on NVMe, after putting more than DRAM holds.
  std::vector<Key128> ChunksOnNvme(size_t count) {
    std::mt19937_64 rng(7);
    const std::vector<Key128> keys = PutFresh(*client_, ns_, rng, 64, kChunkBytes, 4);
    EXPECT_TRUE(PollUntil([&] { return Stats().demotions_pending == 0; }, absl::Seconds(60)));
    auto tiers = client_->Exists(ns_, keys);
    EXPECT_TRUE(tiers.ok()) << tiers.status();
    std::vector<Key128> on_nvme;
    for (size_t i = 0; tiers.ok() && i < keys.size() && on_nvme.size() < count; ++i) {
      if ((*tiers)[i] == ChunkTier::kNvme) on_nvme.push_back(keys[i]);
    }
    return on_nvme;
  }

  std::unique_ptr<TempDir> temp_dir_;
};

TEST_F(ThrottledNvmeTest, SlowReadsTurnTheAdviceToRecompute) {
  const std::vector<Key128> keys = ChunksOnNvme(4);
  ASSERT_EQ(keys.size(), 4u) << "too few chunks were demoted to NVMe";

  // A slower engine than the default H100 (2000 tokens/s), so that NVMe at its prior
  // bandwidth is clearly worth fetching: 8 tokens cost 4 ms to recompute, 0.7 ms to fetch.
  FetchAdvisorOptions o;
  o.kv_bytes_per_token = kKvBytesPerToken;
  o.prefill.tokens_per_s = 2000;
  auto advisor = FetchAdvisor::Create(o);
  ASSERT_TRUE(advisor.ok()) << advisor.status();
  FetchAdvisor& a = **advisor;
  ASSERT_TRUE(a.ShouldFetch(kChunkTokens, ChunkTier::kNvme));
  const std::vector<ChunkTier> lookup(4, ChunkTier::kNvme);
  ASSERT_EQ(a.ChunksToFetch(lookup, kChunkTokens, 4 * kChunkTokens), 4u);

  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(GetMany(*client_, ns_, keys, kChunkBytes, &bufs, &items).ok());
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  for (const GetItem& item : items) ASSERT_TRUE(item.status.ok()) << item.status;
  a.RecordFetch(ChunkTier::kNvme, keys.size() * kChunkBytes, seconds.count());

  // At most the throttle's rate (the advisor subtracts its fixed latency from the time,
  // hence the 1% allowance): a chunk now costs >= 125 ms to fetch against 4 ms to recompute.
  EXPECT_LE(a.BandwidthBytesPerSecond(ChunkTier::kNvme), kReadBytesPerS * 1.01);
  EXPECT_FALSE(a.ShouldFetch(kChunkTokens, ChunkTier::kNvme));
  EXPECT_EQ(a.ChunksToFetch(lookup, kChunkTokens, 4 * kChunkTokens), 0u);
  // DRAM hits are still fetched, up to the first NVMe one.
  EXPECT_TRUE(a.ShouldFetch(kChunkTokens, ChunkTier::kDram));
  const std::vector<ChunkTier> mixed = {ChunkTier::kDram, ChunkTier::kDram, ChunkTier::kNvme,
                                        ChunkTier::kDram};
  EXPECT_EQ(a.ChunksToFetch(mixed, kChunkTokens, 4 * kChunkTokens), 2u);
}

}  // namespace
}  // namespace kvstash::testing
