#include "storage/lru_policy.h"

#include <vector>

#include "gtest/gtest.h"

namespace kvstash::storage {
namespace {

// Contract every policy must meet; runs over every name the factory knows.
class EvictionPolicyContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto p = CreateEvictionPolicy(GetParam());
    ASSERT_TRUE(p.ok()) << p.status();
    policy_ = *std::move(p);
    hooks_.resize(8);
    for (PolicyHook& h : hooks_) policy_->OnInsert(&h);
  }
  static bool Any(const PolicyHook*) { return true; }

  EvictionPolicyPtr policy_;
  std::vector<PolicyHook> hooks_;
};

TEST_P(EvictionPolicyContractTest, NameMatchesFactoryName) {
  EXPECT_EQ(policy_->name(), GetParam());
}

TEST_P(EvictionPolicyContractTest, VictimsAreInsertedEntriesUntilNoneRemain) {
  for (size_t i = 0; i < hooks_.size(); ++i) {
    PolicyHook* v = policy_->PickVictim(Any);
    ASSERT_NE(v, nullptr);
    EXPECT_GE(v, &hooks_.front());
    EXPECT_LE(v, &hooks_.back());
    policy_->OnErase(v);
  }
  EXPECT_EQ(policy_->PickVictim(Any), nullptr);
}

TEST_P(EvictionPolicyContractTest, NeverPicksWhatThePredicateRefuses) {
  const PolicyHook* only = &hooks_[5];
  EXPECT_EQ(policy_->PickVictim([&](const PolicyHook* h) { return h == only; }), only);
  EXPECT_EQ(policy_->PickVictim([](const PolicyHook*) { return false; }), nullptr);
}

TEST_P(EvictionPolicyContractTest, ErasedEntriesAreNeverPicked) {
  for (size_t i = 0; i < hooks_.size(); i += 2) policy_->OnErase(&hooks_[i]);
  policy_->OnAccess(&hooks_[1]);
  for (size_t i = 1; i < hooks_.size(); i += 2) {
    PolicyHook* v = policy_->PickVictim(Any);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ((v - hooks_.data()) % 2, 1);
    policy_->OnErase(v);
  }
  EXPECT_EQ(policy_->PickVictim(Any), nullptr);
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, EvictionPolicyContractTest,
                         ::testing::ValuesIn(KnownEvictionPolicies()));

TEST(EvictionPolicyFactoryTest, UnknownNameListsKnownOnes) {
  auto p = CreateEvictionPolicy("fifo-ish");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("lru"), absl::string_view::npos);
}

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
