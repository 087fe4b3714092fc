#include "storage/index.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "storage/policy/policies.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::MakeId;
using testing::MakeKey;

// A payload-less chunk: the index only looks at meta().size_bytes.
class FakeChunk final : public StoredChunk {
 public:
  explicit FakeChunk(uint64_t size) { meta_.size_bytes = size; }
  const ChunkMeta& meta() const override { return meta_; }
  absl::Span<const Segment> segments() const override { return {}; }

 private:
  ChunkMeta meta_;
};

ChunkRef Chunk(uint64_t size = 100) { return std::make_shared<FakeChunk>(size); }

std::unique_ptr<ChunkIndex> MakeIndex(int shards) {
  auto index = ChunkIndex::Create(shards, "lru");
  EXPECT_TRUE(index.ok()) << index.status();
  return index.ok() ? *std::move(index) : nullptr;
}

TEST(ChunkIndexTest, RejectsBadShardCountAndPolicy) {
  EXPECT_FALSE(ChunkIndex::Create(3, "lru").ok());
  EXPECT_FALSE(ChunkIndex::Create(0, "lru").ok());
  EXPECT_FALSE(ChunkIndex::Create(4, "nope").ok());
}

TEST(ChunkIndexTest, InsertGetLocateErase) {
  auto index = MakeIndex(8);
  const ChunkId id = MakeId(1);
  EXPECT_EQ(index->Locate(id), Tier::kNone);
  EXPECT_EQ(index->Get(id), nullptr);
  ChunkRef chunk = Chunk(123);
  EXPECT_TRUE(index->Insert(id, chunk, Tier::kDram));
  EXPECT_FALSE(index->Insert(id, Chunk(5), Tier::kDram));  // first insert wins
  EXPECT_EQ(index->Locate(id), Tier::kDram);
  EXPECT_EQ(index->Get(id), chunk);
  EXPECT_EQ(index->size(), 1u);
  EXPECT_EQ(index->TierUsage(Tier::kDram), std::make_pair(uint64_t{1}, uint64_t{123}));
  EXPECT_EQ(index->Erase(id), chunk);
  EXPECT_EQ(index->Erase(id), nullptr);
  EXPECT_EQ(index->Locate(id), Tier::kNone);
  EXPECT_EQ(index->size(), 0u);

  const CounterSnapshot c = index->NamespaceCounters(id.ns);
  EXPECT_EQ(c.puts, 1u);
  EXPECT_EQ(c.hits, 1u);
  EXPECT_EQ(c.misses, 1u);
  EXPECT_EQ(c.deletes, 1u);
  EXPECT_EQ(c.chunks, 0u);
  EXPECT_EQ(c.bytes, 0u);
}

TEST(ChunkIndexTest, EvictsInLruOrderWithOneShard) {
  auto index = MakeIndex(1);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(index->Insert(MakeId(i), Chunk(), Tier::kDram));
  index->Get(MakeId(0));  // 0 becomes the most recent
  for (int expected : {1, 2, 3, 0}) {
    ChunkRef victim = index->EvictOne();
    ASSERT_NE(victim, nullptr);
    EXPECT_EQ(index->Locate(MakeId(expected)), Tier::kNone) << expected;
  }
  EXPECT_EQ(index->EvictOne(), nullptr);
  EXPECT_EQ(index->NamespaceCounters(MakeId(0).ns).evictions, 4u);
}

TEST(ChunkIndexTest, EvictionSkipsLeasedAndReferencedEntries) {
  auto index = MakeIndex(4);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(index->Insert(MakeId(i), Chunk(), Tier::kDram));
  const ProbeResult leased = index->Probe(MakeId(0), /*take_lease=*/true);
  EXPECT_EQ(leased.tier, Tier::kDram);
  ChunkRef reader = index->Get(MakeId(1));
  ASSERT_NE(index->EvictOne(), nullptr);  // only chunk 2 may go
  EXPECT_EQ(index->Locate(MakeId(2)), Tier::kNone);
  EXPECT_EQ(index->EvictOne(), nullptr);

  reader.reset();
  ASSERT_NE(index->EvictOne(), nullptr);
  EXPECT_EQ(index->Locate(MakeId(1)), Tier::kNone);
  index->DropLeaseRef(MakeId(0), leased.generation);
  ASSERT_NE(index->EvictOne(), nullptr);
  EXPECT_EQ(index->size(), 0u);
}

// A reader that takes and drops the oldest entry's reference while eviction runs must
// not make it evict a warm entry: when the oldest is pinned, the next oldest goes.
TEST(ChunkIndexTest, EvictionRacingAReaderOfTheOldestStillEvictsTheOldest) {
  constexpr int kRounds = 10000, kEntries = 16;
  auto index = MakeIndex(4);
  std::atomic<int> round{0};
  std::thread reader([&] {
    for (int r; (r = round.load()) < kRounds;) index->Peek(MakeId(r * kEntries)).reset();
  });
  int wrong = 0;
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < kEntries; ++i) {
      EXPECT_TRUE(index->Insert(MakeId(r * kEntries + i), Chunk(), Tier::kDram));
    }
    round.store(r);
    EvictedEntry victim;
    const bool evicted = index->EvictOne(&victim) != nullptr;
    if (!evicted ||
        (!(victim.id == MakeId(r * kEntries)) && !(victim.id == MakeId(r * kEntries + 1)))) {
      ++wrong;
    }
    for (int i = 0; i < kEntries; ++i) index->Erase(MakeId(r * kEntries + i));
  }
  round.store(kRounds);
  reader.join();
  EXPECT_EQ(wrong, 0) << "evictions of rounds that took neither of the two oldest entries";
}

TEST(ChunkIndexTest, StaleLeaseRefDoesNotUnpinAReplacedEntry) {
  auto index = MakeIndex(2);
  const ChunkId id = MakeId(9);
  ASSERT_TRUE(index->Insert(id, Chunk(), Tier::kDram));
  const ProbeResult old_hold = index->Probe(id, true);
  ASSERT_NE(index->Erase(id), nullptr);  // deleted under a lease, then put again
  ASSERT_TRUE(index->Insert(id, Chunk(), Tier::kDram));
  const ProbeResult new_hold = index->Probe(id, true);
  EXPECT_NE(old_hold.generation, new_hold.generation);
  index->DropLeaseRef(id, old_hold.generation);
  EXPECT_EQ(index->EvictOne(), nullptr);  // still leased by new_hold
  index->DropLeaseRef(id, new_hold.generation);
  EXPECT_NE(index->EvictOne(), nullptr);
}

TEST(ChunkIndexTest, ProbeWithoutLeaseTakesNoRef) {
  auto index = MakeIndex(2);
  ASSERT_TRUE(index->Insert(MakeId(1), Chunk(), Tier::kDram));
  EXPECT_EQ(index->Probe(MakeId(1), false).tier, Tier::kDram);
  EXPECT_EQ(index->Probe(MakeId(2), true).tier, Tier::kNone);
  EXPECT_NE(index->EvictOne(), nullptr);
}

TEST(ChunkIndexTest, CountersAreKeptPerNamespaceAcrossShards) {
  auto index = MakeIndex(16);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(index->Insert(MakeId(i, 1), Chunk(10), Tier::kDram));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(index->Insert(MakeId(i, 2), Chunk(1), Tier::kDram));
  index->RecordLookup(MakeId(0, 1).ns, MakeKey(0), 7);
  index->RecordLookup(MakeId(0, 1).ns, MakeKey(5), 0);

  const CounterSnapshot ns1 = index->NamespaceCounters(MakeId(0, 1).ns);
  EXPECT_EQ(ns1.chunks, 50u);
  EXPECT_EQ(ns1.bytes, 500u);
  EXPECT_EQ(ns1.puts, 50u);
  EXPECT_EQ(ns1.lookups, 2u);
  EXPECT_EQ(ns1.lookup_hit_chunks, 7u);
  EXPECT_EQ(index->NamespaceCounters(MakeId(0, 2).ns).chunks, 20u);
  EXPECT_EQ(index->NamespaceCounters(MakeId(0, 3).ns).puts, 0u);  // never seen: zeroes

  const auto all = index->AllNamespaceCounters();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_LT(all[0].first, all[1].first);
  EXPECT_EQ(index->Totals().chunks, 70u);
  EXPECT_EQ(index->Totals().bytes, 520u);
}

TEST(ChunkIndexTest, HintsOrderEvictionAndSayWhatMustBeKept) {
  auto index = MakeIndex(4);
  absl::Time now = absl::FromUnixSeconds(100);
  index->SetClock([&now] { return now; });
  PutHints session;
  session.session_id = 4;
  PutHints ttl;
  ttl.ttl_ms = 50;
  PutHints high;
  high.priority = Priority::kHigh;
  PutHints pin;
  pin.pin = true;
  ASSERT_TRUE(index->Insert(MakeId(0), Chunk(), Tier::kDram, true, session));
  ASSERT_TRUE(index->Insert(MakeId(1), Chunk(), Tier::kDram, true, ttl));
  ASSERT_TRUE(index->Insert(MakeId(2), Chunk(), Tier::kDram, true, high));
  ASSERT_TRUE(index->Insert(MakeId(3), Chunk(), Tier::kDram, true, pin));
  ASSERT_TRUE(index->Insert(MakeId(4), Chunk(), Tier::kDram));
  EvictedEntry victim;
  std::vector<uint64_t> order;
  std::vector<bool> keep;
  now += absl::Milliseconds(10);  // the TTL still holds
  for (int i = 0; i < 4; ++i) {
    ASSERT_NE(index->EvictOne(&victim), nullptr) << i;
    order.push_back(victim.id == MakeId(0)   ? 0
                    : victim.id == MakeId(1) ? 1
                    : victim.id == MakeId(2) ? 2
                                             : 4);
    keep.push_back(victim.keep);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{4, 2, 1, 0}));
  EXPECT_EQ(keep, (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(index->EvictOne(&victim), nullptr);  // only the pinned one is left
  const CounterSnapshot c = index->NamespaceCounters(MakeId(0).ns);
  EXPECT_EQ(c.hint_drops, 3u);
  EXPECT_EQ(c.pinned_bytes, 100u);
  EXPECT_TRUE(index->SetPinned(MakeId(3), false).changed);
  EXPECT_EQ(index->NamespaceCounters(MakeId(0).ns).pinned_bytes, 0u);
  EXPECT_NE(index->EvictOne(&victim), nullptr);
}

TEST(ChunkIndexTest, EndedSessionsAndLapsedTtlsBecomeOrdinary) {
  auto index = MakeIndex(4);
  absl::Time now = absl::FromUnixSeconds(100);
  index->SetClock([&now] { return now; });
  PutHints session;
  session.session_id = 4;
  PutHints ttl;
  ttl.ttl_ms = 50;
  ASSERT_TRUE(index->Insert(MakeId(0), Chunk(), Tier::kDram, true, session));
  ASSERT_TRUE(index->Insert(MakeId(1), Chunk(), Tier::kDram, true, ttl));
  ASSERT_TRUE(index->Insert(MakeId(2), Chunk(), Tier::kDram, true, PutHints{}));
  index->EndSessions({SessionKey{MakeId(0).ns, 4}});
  now += absl::Milliseconds(50);
  EvictedEntry victim;
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(index->EvictOne(&victim), nullptr) << i;
    EXPECT_FALSE(victim.keep) << i;
  }
  EXPECT_EQ(index->NamespaceCounters(MakeId(0).ns).hint_drops, 0u);
}

TEST(ChunkIndexTest, OnlyActiveSessionsAreJoined) {
  // An entry joining an ended session would keep its protection forever: no one ends it.
  auto index = MakeIndex(4);
  index->SetSessionCheck([](const SessionKey& s) { return s.id == 1; });
  PutHints ended;
  ended.session_id = 2;
  ASSERT_TRUE(index->Insert(MakeId(0), Chunk(), Tier::kDram, true, ended));
  ASSERT_TRUE(index->Insert(MakeId(1), Chunk(), Tier::kDram, true, PutHints{}));
  index->Probe(MakeId(1), false, /*session_id=*/3);
  ASSERT_TRUE(index->Insert(MakeId(2), Chunk(), Tier::kDram, true, PutHints{}));
  index->Probe(MakeId(2), false, /*session_id=*/1);
  for (const ColdEntry& e : index->Coldest(UINT64_MAX, 10)) {
    EXPECT_EQ(e.eviction_class,
              e.id == MakeId(2) ? EvictionClass::kSession : EvictionClass::kNormal);
  }
  EXPECT_EQ(index->Coldest(UINT64_MAX, 10).size(), 3u);
}

PutHints ChildOf(const ChunkId& parent) {
  PutHints hints;
  hints.has_parent = true;
  hints.parent = parent.key;
  return hints;
}

TEST(ChunkIndexChildrenTest, CountsCachedChildrenAcrossShards) {
  auto index = MakeIndex(16);
  const ChunkId parent = MakeId(100);
  ASSERT_TRUE(index->Insert(parent, Chunk(), Tier::kDram));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(index->Insert(MakeId(i), Chunk(), Tier::kDram, true, ChildOf(parent)));
  }
  EXPECT_EQ(index->Children(parent), 10u);
  index->Get(parent);  // the most recent: LRU evicts every child first
  // A repeated put of a cached child changes nothing.
  EXPECT_FALSE(index->Insert(MakeId(0), Chunk(), Tier::kDram, true, ChildOf(parent)));
  EXPECT_EQ(index->Children(parent), 10u);
  // Children leave by delete and by eviction.
  ASSERT_NE(index->Erase(MakeId(0)), nullptr);
  EXPECT_EQ(index->Children(parent), 9u);
  for (int left = 8; left >= 0; --left) {
    EvictedEntry victim;
    ASSERT_NE(index->EvictOne(&victim), nullptr);
    EXPECT_FALSE(victim.id == parent);
    EXPECT_EQ(index->Children(parent), static_cast<uint32_t>(left));
  }
  EXPECT_EQ(index->Locate(parent), Tier::kDram);
}

TEST(ChunkIndexChildrenTest, ParentIsProtectedAtLeastAsLongAsItsChild) {
  auto index = MakeIndex(4);
  absl::Time now = absl::FromUnixSeconds(100);
  index->SetClock([&now] { return now; });
  ASSERT_TRUE(index->Insert(MakeId(0), Chunk(), Tier::kDram));
  PutHints ttl = ChildOf(MakeId(0));
  ttl.ttl_ms = 1000;
  ASSERT_TRUE(index->Insert(MakeId(1), Chunk(), Tier::kDram, true, ttl));
  ASSERT_TRUE(index->Insert(MakeId(2), Chunk(), Tier::kDram));
  PutHints session = ChildOf(MakeId(2));
  session.session_id = 4;
  ASSERT_TRUE(index->Insert(MakeId(3), Chunk(), Tier::kDram, true, session));
  auto class_of = [&](uint64_t i) {
    for (const ColdEntry& e : index->Coldest(UINT64_MAX, 10)) {
      if (e.id == MakeId(i)) return e.eviction_class;
    }
    return EvictionClass::kPinned;
  };
  EXPECT_EQ(class_of(0), EvictionClass::kTtl);
  EXPECT_EQ(class_of(2), EvictionClass::kSession);
  // Ordinary chunks go first: the heads are no longer among them.
  ASSERT_TRUE(index->Insert(MakeId(4), Chunk(), Tier::kDram));
  EvictedEntry victim;
  ASSERT_NE(index->EvictOne(&victim), nullptr);
  EXPECT_EQ(victim.id, MakeId(4));
  index->EndSessions({SessionKey{MakeId(0).ns, 4}});
  EXPECT_EQ(class_of(2), EvictionClass::kNormal);
}

TEST(ChunkIndexChildrenTest, ParentOfAnotherNamespaceIsNotCounted) {
  auto index = MakeIndex(4);
  const ChunkId parent = MakeId(1, /*ns=*/1);
  ASSERT_TRUE(index->Insert(parent, Chunk(), Tier::kDram));
  ASSERT_TRUE(index->Insert(MakeId(2, /*ns=*/2), Chunk(), Tier::kDram, true, ChildOf(parent)));
  EXPECT_EQ(index->Children(parent), 0u);  // the hint names a key in the child's namespace
}

TEST(ChunkIndexChildrenTest, ParentPutAfterItsChildStartsAtZero) {
  auto index = MakeIndex(4);
  const ChunkId parent = MakeId(1), child = MakeId(2);
  ASSERT_TRUE(index->Insert(child, Chunk(), Tier::kDram, true, ChildOf(parent)));
  ASSERT_TRUE(index->Insert(parent, Chunk(), Tier::kDram));
  EXPECT_EQ(index->Children(parent), 0u);
  ASSERT_NE(index->Erase(child), nullptr);  // and the child's removal leaves it at 0
  EXPECT_EQ(index->Children(parent), 0u);
}

TEST(ChunkIndexChildrenTest, ReplacedParentIsNotUncountedByOldChildren) {
  auto index = MakeIndex(4);
  const ChunkId parent = MakeId(1);
  ASSERT_TRUE(index->Insert(parent, Chunk(), Tier::kDram));
  ASSERT_TRUE(index->Insert(MakeId(2), Chunk(), Tier::kDram, true, ChildOf(parent)));
  ASSERT_NE(index->Erase(parent), nullptr);
  ASSERT_TRUE(index->Insert(parent, Chunk(), Tier::kDram));
  ASSERT_TRUE(index->Insert(MakeId(3), Chunk(), Tier::kDram, true, ChildOf(parent)));
  EXPECT_EQ(index->Children(parent), 1u);
  ASSERT_NE(index->Erase(MakeId(2)), nullptr);  // counted in the old entry only
  EXPECT_EQ(index->Children(parent), 1u);
  ASSERT_NE(index->Erase(MakeId(3)), nullptr);
  EXPECT_EQ(index->Children(parent), 0u);
}

TEST(ChunkIndexChildrenTest, ChainPolicyEvictsLeavesBeforeTheirParents) {
  auto created = ChunkIndex::Create(8, "chain");
  ASSERT_TRUE(created.ok()) << created.status();
  ChunkIndex& index = **created;
  // A 3-chunk chain put first, then an unrelated chunk: the chain's head is the oldest.
  const ChunkId a = MakeId(1), b = MakeId(2), c = MakeId(3), other = MakeId(4);
  ASSERT_TRUE(index.Insert(a, Chunk(), Tier::kDram));
  ASSERT_TRUE(index.Insert(b, Chunk(), Tier::kDram, true, ChildOf(a)));
  ASSERT_TRUE(index.Insert(c, Chunk(), Tier::kDram, true, ChildOf(b)));
  ASSERT_TRUE(index.Insert(other, Chunk(), Tier::kDram));
  std::vector<ChunkId> order;
  EvictedEntry victim;
  while (index.EvictOne(&victim) != nullptr) order.push_back(victim.id);
  // c is the only leaf of the chain; then b and a become leaves, older than `other`.
  EXPECT_EQ(order, (std::vector<ChunkId>{c, b, a, other}));
}

TEST(ChunkIndexChildrenTest, EveryPolicyRunsTheIndex) {
  for (const std::string& name : KnownEvictionPolicies()) {
    auto created = ChunkIndex::Create(4, name);
    ASSERT_TRUE(created.ok()) << name;
    ChunkIndex& index = **created;
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(index.Insert(MakeId(i), Chunk(), Tier::kDram, true, ChildOf(MakeId(i - 1))));
      if (i % 3 == 0) index.Get(MakeId(i / 2));
    }
    EXPECT_EQ(index.Coldest(UINT64_MAX, 100).size(), 20u) << name;
    int evicted = 0;
    while (index.EvictOne() != nullptr) ++evicted;
    EXPECT_EQ(evicted, 20) << name;
    EXPECT_EQ(index.size(), 0u) << name;
  }
}

TEST(ChunkIndexChildrenTest, PinnedParentCountsChildrenRemovedByEveryPath) {
  auto index = MakeIndex(4);
  const ChunkId parent = MakeId(100);
  PutHints pin;
  pin.pin = true;
  ASSERT_TRUE(index->Insert(parent, Chunk(), Tier::kDram, true, pin));  // in no policy
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(index->Insert(MakeId(i), Chunk(), Tier::kDram, true, ChildOf(parent)));
  }
  EXPECT_EQ(index->Children(parent), 4u);
  EvictedEntry victim;
  ASSERT_NE(index->EvictOneMatching([](const Key128&) { return true; }, &victim), nullptr);
  EXPECT_FALSE(victim.id == parent);
  EXPECT_FALSE(victim.keep);  // a child without hints of its own
  EXPECT_EQ(index->Children(parent), 3u);
  ASSERT_NE(index->EvictOne(&victim), nullptr);
  EXPECT_EQ(index->Children(parent), 2u);
  ASSERT_TRUE(index->SetPinned(parent, false).changed);  // back in a policy, count kept
  EXPECT_EQ(index->Children(parent), 2u);
  ASSERT_FALSE(index->Coldest(UINT64_MAX, 10).empty());
  EXPECT_FALSE(index->Coldest(UINT64_MAX, 10).front().keep);
  ASSERT_NE(index->Erase(MakeId(3)), nullptr);
  EXPECT_EQ(index->Children(parent), 1u);
  EXPECT_EQ(index->EraseNamespace(parent.ns).ids.size(), 2u);
  EXPECT_EQ(index->size(), 0u);
}

}  // namespace
}  // namespace kvstash::storage
