#include "storage/policy/lru_policy.h"

#include <vector>

#include "gtest/gtest.h"

namespace kvstash::storage {
namespace {

TEST(LruPolicyTest, EvictsLeastRecentlyUsedFirst) {
  LruPolicy lru;
  PolicyHook a, b, c, d;
  for (PolicyHook* h : {&a, &b, &c, &d}) lru.OnInsert(h);
  lru.OnAccess(&a);  // order now, cold to hot: b c d a
  lru.OnAccess(&c);  // b d a c
  std::vector<PolicyHook*> order;
  while (PolicyHook* v = lru.PickVictim([](const PolicyHook*) { return true; })) {
    order.push_back(v);
    lru.OnErase(v);
  }
  EXPECT_EQ(order, (std::vector<PolicyHook*>{&b, &d, &a, &c}));
}

TEST(LruPolicyTest, SkippedEntriesKeepTheirPlace) {
  LruPolicy lru;
  PolicyHook a, b, c;
  for (PolicyHook* h : {&a, &b, &c}) lru.OnInsert(h);
  // a is pinned (e.g. leased): b goes first, and a is next once unpinned.
  PolicyHook* v = lru.PickVictim([&](const PolicyHook* h) { return h != &a; });
  EXPECT_EQ(v, &b);
  lru.OnErase(v);
  EXPECT_EQ(lru.PickVictim([](const PolicyHook*) { return true; }), &a);
}

TEST(LruPolicyTest, AccessOfHottestIsANoOp) {
  LruPolicy lru;
  PolicyHook a, b;
  lru.OnInsert(&a);
  lru.OnInsert(&b);
  lru.OnAccess(&b);
  lru.OnAccess(&b);
  EXPECT_EQ(lru.PickVictim([](const PolicyHook*) { return true; }), &a);
}

}  // namespace
}  // namespace kvstash::storage
