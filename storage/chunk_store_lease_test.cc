// Lookup and leases through the public ChunkStore API.
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "storage/chunk_store.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::MakeId;
using testing::MakeKey;
using testing::PutPattern;

constexpr uint64_t kPage = 64 << 10;
constexpr uint64_t kNs = 1;

// A clock that moves only when told to.
//
// Thread-safety: thread-safe.
class FakeClock {
 public:
  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1'000'000);
};

// `clock` must outlive the store.
std::unique_ptr<ChunkStore> MakeStore(uint32_t pages, const FakeClock* clock,
                                      absl::Duration max_lease = absl::Seconds(60)) {
  ChunkStoreOptions o;
  o.clock = [clock] { return clock->Now(); };
  o.page_bytes = kPage;
  o.dram_capacity_bytes = pages * kPage;
  o.huge_pages = ChunkStoreOptions::HugePages::kOff;
  o.index_shards = 4;
  o.max_lease = max_lease;
  auto store = ChunkStore::Create(o);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

const Key128 kNsId = MakeId(0, kNs).ns;

std::vector<Key128> Keys(int from, int to) {
  std::vector<Key128> keys;
  for (int i = from; i < to; ++i) keys.push_back(MakeKey(i));
  return keys;
}

// Puts one-page chunks from..to-1 (keys i), evicting older ones when full.
void Churn(ChunkStore& store, int from, int to) {
  for (int i = from; i < to; ++i) ASSERT_TRUE(PutPattern(store, MakeId(i, kNs), i, kPage).ok());
}

class ChunkStoreLeaseTest : public ::testing::Test {
 protected:
  FakeClock clock_;
};

TEST_F(ChunkStoreLeaseTest, LookupCountsLeadingHitsOnly) {
  auto store = MakeStore(16, &clock_);
  Churn(*store, 0, 5);
  std::vector<Key128> keys = Keys(0, 3);
  keys.push_back(MakeKey(100));  // a miss...
  keys.push_back(MakeKey(4));    // ...stops the count even though this one is present
  LookupResult r = store->Lookup(kNsId, keys, absl::ZeroDuration());
  EXPECT_EQ(r.hit_count, 3u);
  EXPECT_EQ(r.tiers, std::vector<Tier>(3, Tier::kDram));
  EXPECT_EQ(r.lease_id, 0u);
  const CounterSnapshot c = store->NamespaceCounters(kNsId);
  EXPECT_EQ(c.lookups, 1u);
  EXPECT_EQ(c.lookup_hit_chunks, 3u);
  EXPECT_EQ(store->Lookup(kNsId, {}, absl::Seconds(1)).lease_id, 0u);  // nothing to hold
}

TEST_F(ChunkStoreLeaseTest, LeasedChunksSurviveEvictionPressure) {
  auto store = MakeStore(8, &clock_);
  Churn(*store, 0, 8);
  LookupResult r = store->Lookup(kNsId, Keys(0, 4), absl::Seconds(30));
  ASSERT_EQ(r.hit_count, 4u);
  ASSERT_NE(r.lease_id, 0u);
  EXPECT_EQ(r.lease_expires, clock_.Now() + absl::Seconds(30));
  Churn(*store, 100, 140);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(store->Locate(MakeId(i, kNs)), Tier::kDram) << i;
  for (int i = 4; i < 8; ++i) EXPECT_EQ(store->Locate(MakeId(i, kNs)), Tier::kNone) << i;

  // Released chunks become evictable again; the others stay protected.
  for (int i = 0; i < 3; ++i) store->ReleaseLease(r.lease_id, MakeId(i, kNs));
  store->ReleaseLease(r.lease_id, MakeId(0, kNs));  // twice: no effect
  Churn(*store, 200, 240);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(store->Locate(MakeId(i, kNs)), Tier::kNone) << i;
  EXPECT_EQ(store->Locate(MakeId(3, kNs)), Tier::kDram);
}

TEST_F(ChunkStoreLeaseTest, ExpiredLeasesStopProtecting) {
  auto store = MakeStore(8, &clock_);
  Churn(*store, 0, 8);
  LookupResult r = store->Lookup(kNsId, Keys(0, 8), absl::Seconds(10));
  ASSERT_EQ(r.hit_count, 8u);
  ASSERT_NE(r.lease_id, 0u);
  clock_.Advance(absl::Seconds(10) - absl::Nanoseconds(1));
  ChunkMeta meta;
  meta.size_bytes = kPage;
  // Not due yet: every chunk stays leased, so there is no room.
  EXPECT_EQ(store->BeginPut(MakeId(100, kNs), meta).status().code(),
            absl::StatusCode::kResourceExhausted);
  clock_.Advance(absl::Nanoseconds(1));
  Churn(*store, 100, 108);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(store->Locate(MakeId(i, kNs)), Tier::kNone) << i;
  store->ReleaseLease(r.lease_id, MakeId(0, kNs));  // after expiry: harmless
}

TEST_F(ChunkStoreLeaseTest, LeaseIsClampedToMaxLease) {
  auto store = MakeStore(8, &clock_, absl::Milliseconds(50));
  Churn(*store, 0, 1);
  LookupResult r = store->Lookup(kNsId, Keys(0, 1), absl::Hours(1));
  ASSERT_NE(r.lease_id, 0u);
  EXPECT_EQ(r.lease_expires, clock_.Now() + absl::Milliseconds(50));
  auto no_lease_store = MakeStore(8, &clock_, absl::ZeroDuration());
  Churn(*no_lease_store, 0, 1);
  EXPECT_EQ(no_lease_store->Lookup(kNsId, Keys(0, 1), absl::Hours(1)).lease_id, 0u);
}

TEST_F(ChunkStoreLeaseTest, AllLeasedIsResourceExhausted) {
  auto store = MakeStore(4, &clock_);
  Churn(*store, 0, 4);
  LookupResult r = store->Lookup(kNsId, Keys(0, 4), absl::Seconds(30));
  ASSERT_EQ(r.hit_count, 4u);
  ChunkMeta meta;
  meta.size_bytes = kPage;
  auto pending = store->BeginPut(MakeId(50, kNs), meta);
  EXPECT_EQ(pending.status().code(), absl::StatusCode::kResourceExhausted);
  store->ReleaseLease(r.lease_id, MakeId(2, kNs));
  EXPECT_TRUE(store->BeginPut(MakeId(50, kNs), meta).ok());
}

TEST_F(ChunkStoreLeaseTest, GetAsyncWithTheLeaseReleasesItsHold) {
  auto store = MakeStore(4, &clock_);
  Churn(*store, 0, 4);
  LookupResult r = store->Lookup(kNsId, Keys(0, 4), absl::Seconds(30));
  ASSERT_EQ(r.hit_count, 4u);
  bool called = false;
  store->GetAsync(MakeId(1, kNs), r.lease_id, [&](absl::StatusOr<ChunkRef> ref) {
    EXPECT_TRUE(ref.ok()) << ref.status();
    called = true;
  });
  ASSERT_TRUE(called);  // a DRAM hit answers inline
  ChunkMeta meta;
  meta.size_bytes = kPage;
  auto pending = store->BeginPut(MakeId(50, kNs), meta);
  EXPECT_TRUE(pending.ok()) << pending.status();  // chunk 1 was evictable
  EXPECT_EQ(store->Locate(MakeId(1, kNs)), Tier::kNone);
  for (int i : {0, 2, 3}) EXPECT_EQ(store->Locate(MakeId(i, kNs)), Tier::kDram) << i;
}

TEST_F(ChunkStoreLeaseTest, DeleteOfLeasedChunkWinsAndReputIsUnprotected) {
  auto store = MakeStore(4, &clock_);
  Churn(*store, 0, 1);
  LookupResult r = store->Lookup(kNsId, Keys(0, 1), absl::Seconds(30));
  ASSERT_TRUE(store->Delete(MakeId(0, kNs)).ok());
  Churn(*store, 0, 1);                              // same key again, no lease on it
  store->ReleaseLease(r.lease_id, MakeId(0, kNs));  // the old lease must not touch it
  Churn(*store, 10, 14);
  EXPECT_EQ(store->Locate(MakeId(0, kNs)), Tier::kNone);
}

}  // namespace
}  // namespace kvstash::storage
