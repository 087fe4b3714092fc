// Concurrent put / get / lookup+lease / delete under constant eviction pressure. Every
// chunk's payload is derived from its key, so any byte that a reader sees from another
// chunk, from a freed page, or from a half-written put fails the test.
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "storage/chunk_store.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::HasPattern;
using testing::MakeId;
using testing::MakeKey;
using testing::PutPattern;

constexpr uint64_t kPage = 64 << 10;
constexpr int kKeys = 300;
constexpr int kThreads = 4;

// Sizes from 1 byte to 3 pages, fixed per key so a reader knows what to expect.
uint64_t SizeOf(int key) {
  static constexpr uint64_t kSizes[] = {1,     777,       3000,      kPage / 2 + 5,  kPage - 1,
                                        kPage, kPage + 1, 2 * kPage, 3 * kPage - 100};
  return kSizes[key % (sizeof(kSizes) / sizeof(kSizes[0]))];
}

struct Failures {
  std::atomic<int> corrupt{0};
  std::atomic<int> unexpected_status{0};
};

void Worker(ChunkStore& store, int seed, absl::Time deadline, Failures& f) {
  std::mt19937 rng(seed);
  std::vector<std::pair<ChunkRef, int>> held;  // refs kept across other threads' evictions
  for (int iter = 0; iter < 200000 && absl::Now() < deadline; ++iter) {
    const int key = rng() % kKeys;
    const ChunkId id = MakeId(key);
    const int op = rng() % 10;
    if (op < 4) {
      absl::Status s = PutPattern(store, id, key, SizeOf(key));
      // Full of leased/held chunks is a legitimate outcome under this much pressure.
      if (!s.ok() && !absl::IsAlreadyExists(s) && !absl::IsResourceExhausted(s)) {
        ++f.unexpected_status;
      }
    } else if (op < 8) {
      auto chunk = store.Get(id);
      if (!chunk.ok()) {
        if (!absl::IsNotFound(chunk.status())) ++f.unexpected_status;
        continue;
      }
      if (!HasPattern(**chunk, key, SizeOf(key))) ++f.corrupt;
      if (held.size() < 3) held.emplace_back(*std::move(chunk), key);
    } else if (op == 8) {
      std::vector<Key128> keys = {MakeKey(key), MakeKey((key + 1) % kKeys)};
      LookupResult r = store.Lookup(id.ns, keys, absl::Milliseconds(rng() % 3));
      for (uint32_t i = 0; i < r.hit_count && r.lease_id != 0; i += 1 + rng() % 2) {
        store.ReleaseLease(r.lease_id, ChunkId{id.ns, keys[i]});
      }
    } else {
      absl::Status s = store.Delete(id);
      if (!s.ok() && !absl::IsNotFound(s)) ++f.unexpected_status;
    }
    if (!held.empty() && rng() % 8 == 0) {
      if (!HasPattern(*held.back().first, held.back().second, SizeOf(held.back().second))) {
        ++f.corrupt;
      }
      held.pop_back();
    }
  }
}

TEST(ChunkStoreStressTest, ConcurrentPutGetEvictKeepsPayloadsIntact) {
  ChunkStoreOptions o;
  o.page_bytes = kPage;
  o.dram_capacity_bytes = 48 * kPage;  // far below the ~300 chunks' total: constant eviction
  o.huge_pages = ChunkStoreOptions::HugePages::kOff;
  o.index_shards = 8;
  o.max_lease = absl::Milliseconds(5);
  auto store = ChunkStore::Create(o);
  ASSERT_TRUE(store.ok()) << store.status();

  Failures failures;
  const absl::Time deadline = absl::Now() + absl::Seconds(1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(Worker, std::ref(**store), t + 1, deadline, std::ref(failures));
  }
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(failures.corrupt.load(), 0);
  EXPECT_EQ(failures.unexpected_status.load(), 0);
  const StoreStats stats = (*store)->Stats();
  EXPECT_LE(stats.tiers[0].used_bytes, stats.tiers[0].capacity_bytes);
  EXPECT_EQ(stats.total.chunks, stats.tiers[0].chunks);
  EXPECT_GT(stats.total.puts, 0u);
  EXPECT_GT(stats.total.evictions, 0u);

  // Every chunk is intact, and once all are deleted every byte is back in the arena.
  for (int key = 0; key < kKeys; ++key) {
    auto chunk = (*store)->Get(MakeId(key));
    if (chunk.ok()) {
      EXPECT_TRUE(HasPattern(**chunk, key, SizeOf(key))) << key;
    }
    (*store)->Delete(MakeId(key)).IgnoreError();
  }
  EXPECT_EQ((*store)->Stats().tiers[0].chunks, 0u);
  EXPECT_EQ((*store)->Stats().tiers[0].used_bytes, 0u);
}

}  // namespace
}  // namespace kvstash::storage
