#include "storage/policy/tinylfu_policy.h"

#include <vector>

#include "gtest/gtest.h"
#include "storage/policy/lru_policy.h"
#include "storage/policy/policy_test_util.h"

namespace kvstash::storage {
namespace {

using testing::AcceptAll;
using testing::Hooks;

// Inserts 4 entries and a filler, reads the 4 three times each, then inserts a scan of 20
// one-hit entries and evicts 20: returns how many of the 4 were among the victims.
int FrequentEvictedByScan(EvictionPolicy& p) {
  std::vector<PolicyHook> frequent = Hooks(4, 1);
  std::vector<PolicyHook> scan = Hooks(21, 100);  // [0] is the filler
  for (PolicyHook& h : frequent) p.OnInsert(&h);
  p.OnInsert(&scan[0]);
  for (int round = 0; round < 3; ++round) {
    for (PolicyHook& h : frequent) p.OnAccess(&h);
  }
  for (size_t i = 1; i < scan.size(); ++i) p.OnInsert(&scan[i]);
  int evicted_frequent = 0;
  for (int i = 0; i < 20; ++i) {
    PolicyHook* v = p.PickVictim(AcceptAll);
    if (v == nullptr) break;
    if (v >= frequent.data() && v < frequent.data() + frequent.size()) ++evicted_frequent;
    p.OnErase(v);
  }
  // Leave no hook linked to the vectors about to go.
  while (PolicyHook* v = p.PickVictim(AcceptAll)) p.OnErase(v);
  return evicted_frequent;
}

TEST(TinyLfuPolicyTest, FrequentEntriesSurviveAScan) {
  TinyLfuPolicy tinylfu;
  EXPECT_EQ(FrequentEvictedByScan(tinylfu), 0);
  LruPolicy lru;  // the same trace flushes them from an LRU
  EXPECT_EQ(FrequentEvictedByScan(lru), 4);
}

TEST(TinyLfuPolicyTest, ReturningPopularKeyIsAdmittedOverTheMainVictim) {
  TinyLfuPolicy p;
  std::vector<PolicyHook> h = Hooks(6, 1);
  PolicyHook &m1 = h[0], &m2 = h[1], &x = h[2], &k1 = h[3], &y = h[4], &z = h[5];
  for (PolicyHook* e : {&m1, &m2, &x}) p.OnInsert(e);  // m1, m2: candidates
  p.OnAccess(&m1);  // read candidates join the main region: m1 in probation, m2 protected
  p.OnAccess(&m2);
  p.OnErase(&x);
  // A key read often, then evicted, comes back: the sketch still knows it.
  p.OnInsert(&k1);
  for (int i = 0; i < 3; ++i) p.OnAccess(&k1);
  p.OnErase(&k1);
  PolicyHook k2 = k1;
  k2.prev = k2.next = nullptr;
  p.OnInsert(&k2);
  p.OnInsert(&y);  // k2 becomes a candidate
  EXPECT_GT(p.Frequency(&k2), p.Frequency(&m1));
  EXPECT_EQ(p.PickVictim(AcceptAll), &m1);  // k2 admitted to probation, m1 goes instead
  p.OnInsert(&z);                           // y becomes a candidate, seen once: it loses against m1
  EXPECT_EQ(p.PickVictim(AcceptAll), &y);
  while (PolicyHook* v = p.PickVictim(AcceptAll)) p.OnErase(v);
}

TEST(TinyLfuPolicyTest, RankOrdersByFrequencyFirst) {
  TinyLfuPolicy a, b;
  std::vector<PolicyHook> ha = Hooks(1, 1), hb = Hooks(1, 2);
  b.OnInsert(&hb[0]);
  b.OnAccess(&hb[0]);
  a.OnInsert(&ha[0]);  // newer but seen once
  EXPECT_LT(a.VictimRank(&ha[0]), b.VictimRank(&hb[0]));
}

TEST(FrequencySketchTest, CountsSaturateAndHalve) {
  FrequencySketch sketch;
  for (int i = 0; i < 40; ++i) sketch.Increment(7);
  EXPECT_EQ(sketch.Estimate(7), FrequencySketch::kMaxCount);
  EXPECT_EQ(sketch.Estimate(8), 0u);
  // Ten events per column halve every count.
  const size_t events = 10 * sketch.width();
  for (size_t i = 0; i < events; ++i) sketch.Increment(1000 + i % 1000);
  EXPECT_LE(sketch.Estimate(7), FrequencySketch::kMaxCount / 2);
}

TEST(FrequencySketchTest, GrowsWithTheKeys) {
  FrequencySketch sketch;
  const size_t before = sketch.width();
  sketch.EnsureCapacity(before * 3);
  EXPECT_GE(sketch.width(), before * 3);
}

}  // namespace
}  // namespace kvstash::storage
