#include "storage/policy/chain_policy.h"

#include <vector>

#include "gtest/gtest.h"
#include "storage/policy/policy_test_util.h"

namespace kvstash::storage {
namespace {

using testing::AcceptAll;
using testing::DrainOrder;

void SetChildren(ChainPolicy& p, PolicyHook* h, uint32_t children) {
  h->children = children;
  p.OnChildrenChanged(h);
}

TEST(ChainPolicyTest, ParentWithACachedChildOutlivesAnOlderLeaf) {
  ChainPolicy p;
  PolicyHook parent, leaf, child;
  p.OnInsert(&parent);  // oldest
  p.OnInsert(&leaf);
  p.OnInsert(&child);
  SetChildren(p, &parent, 1);
  EXPECT_EQ(DrainOrder(p), (std::vector<PolicyHook*>{&leaf, &child, &parent}));
}

TEST(ChainPolicyTest, AChainIsEatenFromItsTail) {
  ChainPolicy p;
  PolicyHook a, b, c, other;
  p.OnInsert(&a);
  p.OnInsert(&b);
  SetChildren(p, &a, 1);
  p.OnInsert(&c);
  SetChildren(p, &b, 1);
  p.OnInsert(&other);
  // c is the only leaf of the chain; when it goes, b is a leaf again at its old recency.
  ASSERT_EQ(p.PickVictim(AcceptAll), &c);
  p.OnErase(&c);
  SetChildren(p, &b, 0);
  ASSERT_EQ(p.PickVictim(AcceptAll), &b);  // older than `other`
  p.OnErase(&b);
  SetChildren(p, &a, 0);
  EXPECT_EQ(DrainOrder(p), (std::vector<PolicyHook*>{&a, &other}));
}

TEST(ChainPolicyTest, LeavesAreLeastRecentlyUsedFirst) {
  ChainPolicy p;
  PolicyHook a, b, c;
  for (PolicyHook* h : {&a, &b, &c}) p.OnInsert(h);
  p.OnAccess(&a);
  EXPECT_EQ(DrainOrder(p), (std::vector<PolicyHook*>{&b, &c, &a}));
}

TEST(ChainPolicyTest, RegroupedEntriesKeepTheirRecency) {
  ChainPolicy p;
  PolicyHook a, b, c, d;
  for (PolicyHook* h : {&a, &b, &c, &d}) p.OnInsert(h);
  for (PolicyHook* h : {&d, &b}) SetChildren(p, h, 1);  // parents, in reverse order
  SetChildren(p, &c, 1);
  EXPECT_EQ(DrainOrder(p), (std::vector<PolicyHook*>{&a, &b, &c, &d}));
}

TEST(ChainPolicyTest, AnyLeafRanksBelowAnyParent) {
  ChainPolicy with_parent, with_leaf;
  PolicyHook parent, leaf;
  with_parent.OnInsert(&parent);
  SetChildren(with_parent, &parent, 1);
  with_leaf.OnInsert(&leaf);  // newer
  EXPECT_LT(with_leaf.VictimRank(&leaf), with_parent.VictimRank(&parent));
}

}  // namespace
}  // namespace kvstash::storage
