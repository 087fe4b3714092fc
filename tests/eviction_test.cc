// Eviction and leases against a real kvstashd with a small DRAM budget: leased chunks
// survive pressure until fetched or expired, and the daemon's memory stays within its
// budget while far more than the budget is written through it.
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "tests/daemon_fixture.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

class EvictionTest : public DaemonFixture {
 protected:
  void StartDaemon(uint64_t capacity_mib, std::vector<std::string> env = {}) {
    DaemonFixtureOptions options;
    options.set = {absl::StrCat("storage.dram.capacity_bytes=", capacity_mib, "MiB"),
                   "storage.dram.page_bytes=1MiB"};
    options.env = std::move(env);
    ASSERT_NO_FATAL_FAILURE(DaemonFixture::StartDaemon(options));
  }

  // Puts `count` fresh chunks of `size` bytes (pattern content) in batches; returns keys.
  std::vector<Key128> PutFresh(int count, size_t size, int batch = 8) {
    return kvstash::testing::PutFresh(*client_, ns_, rng_, count, size, batch);
  }

  int CountPresent(const std::vector<Key128>& keys) {
    auto present = client_->Exists(ns_, keys);
    EXPECT_TRUE(present.ok()) << present.status();
    if (!present.ok()) return -1;
    int n = 0;
    for (const ChunkTier tier : *present) n += tier != ChunkTier::kNone;
    return n;
  }

  // Gets `keys` in one call (optionally releasing `lease_id`) and checks each payload.
  void ExpectAllStored(const std::vector<Key128>& keys, size_t size, uint64_t lease_id = 0) {
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<GetItem> items;
    ASSERT_TRUE(GetMany(*client_, ns_, keys, size, &bufs, &items, lease_id).ok());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(items[i].status.ok()) << i << ": " << items[i].status;
      ASSERT_EQ(items[i].size, size);
      EXPECT_EQ(FirstPatternMismatch(keys[i], bufs[i].data(), size), -1) << "chunk " << i;
    }
  }

  std::mt19937_64 rng_{77};
};

TEST_F(EvictionTest, LeasedChunksSurviveUntilFetched) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(32));
  const std::vector<Key128> leased = PutFresh(8, kMiB);
  auto lookup = client_->Lookup(ns_, leased, /*lease_ms=*/60000);
  ASSERT_TRUE(lookup.ok()) << lookup.status();
  ASSERT_EQ(lookup->hit_count, leased.size());
  ASSERT_NE(lookup->lease_id, 0u);

  // Twice the budget of newer chunks: everything unleased and older must make room.
  const std::vector<Key128> flood = PutFresh(64, kMiB);
  EXPECT_EQ(CountPresent(leased), static_cast<int>(leased.size()));
  EXPECT_LT(CountPresent(flood), static_cast<int>(flood.size()));
  auto stats = client_->Stats(&ns_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->evictions, 0u);

  // Fetching with the lease releases it; then the chunks age out like any other.
  ASSERT_NO_FATAL_FAILURE(ExpectAllStored(leased, kMiB, lookup->lease_id));
  PutFresh(64, kMiB);
  EXPECT_EQ(CountPresent(leased), 0);
}

TEST_F(EvictionTest, ExpiredLeaseNoLongerProtects) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(32));
  const std::vector<Key128> leased = PutFresh(8, kMiB);
  auto lookup = client_->Lookup(ns_, leased, /*lease_ms=*/200);
  ASSERT_TRUE(lookup.ok()) << lookup.status();
  ASSERT_EQ(lookup->hit_count, leased.size());
  ASSERT_NE(lookup->lease_id, 0u);
  // Waiting well past the lease; the assertion below is about state, not timing.
  absl::SleepFor(absl::Seconds(1));
  PutFresh(64, kMiB);
  EXPECT_EQ(CountPresent(leased), 0);
}

TEST_F(EvictionTest, LeaseOnMissIsZero) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(32));
  auto lookup = client_->Lookup(ns_, {RandomKey(rng_)}, /*lease_ms=*/60000);
  ASSERT_TRUE(lookup.ok()) << lookup.status();
  EXPECT_EQ(lookup->hit_count, 0u);
  EXPECT_EQ(lookup->lease_id, 0u);
}

// Under AddressSanitizer freed blocks sit in a quarantine; keep it small so the bound below
// still measures the daemon and not the sanitizer.
std::vector<std::string> SanitizerEnv() {
  if (!kUnderAsan) return {};
  const char* existing = getenv("ASAN_OPTIONS");
  return {absl::StrCat("ASAN_OPTIONS=", existing != nullptr ? existing : "",
                       existing != nullptr && *existing != '\0' ? ":" : "",
                       "quarantine_size_mb=16")};
}

TEST_F(EvictionTest, MemoryStaysWithinBudget) {
  if (kUnderTsan) GTEST_SKIP() << "ThreadSanitizer's shadow memory is part of the RSS bounded here";
  constexpr uint64_t kBudgetMiB = 256;
  constexpr size_t kChunk = 4 * kMiB;
  ASSERT_NO_FATAL_FAILURE(StartDaemon(kBudgetMiB, SanitizerEnv()));
  const std::vector<Key128> keys = PutFresh(3 * kBudgetMiB * kMiB / kChunk, kChunk);
  ASSERT_EQ(keys.size(), 3 * kBudgetMiB * kMiB / kChunk);

  auto stats = client_->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->Of(ChunkTier::kDram).capacity_bytes, kBudgetMiB * kMiB);
  EXPECT_LE(stats->Of(ChunkTier::kDram).used_bytes, stats->Of(ChunkTier::kDram).capacity_bytes);
  EXPECT_LE(stats->bytes, stats->Of(ChunkTier::kDram).capacity_bytes);
  EXPECT_GT(stats->evictions, 0u);
  EXPECT_EQ(stats->puts, keys.size());
  EXPECT_EQ(stats->chunks + stats->evictions, keys.size());

  // The oldest chunks made room; the newest are intact.
  EXPECT_EQ(CountPresent({keys.begin(), keys.begin() + 8}), 0);
  const std::vector<Key128> newest(keys.end() - 16, keys.end());
  ASSERT_NO_FATAL_FAILURE(ExpectAllStored(newest, kChunk));

  auto peak = daemon_->PeakRssBytes();
  ASSERT_TRUE(peak.ok()) << peak.status();
  const uint64_t sanitizer_allowance = kUnderAsan ? 128 * kMiB : 0;
  const uint64_t bound = kBudgetMiB * kMiB * 105 / 100 + 150 * kMiB + sanitizer_allowance;
  EXPECT_LE(*peak, bound) << "peak RSS " << (*peak >> 20) << " MiB, bound " << (bound >> 20)
                          << " MiB";
  RecordProperty("peak_rss_mib", static_cast<int>(*peak >> 20));
}

}  // namespace
}  // namespace kvstash::testing
