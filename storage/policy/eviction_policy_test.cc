// The contract every eviction policy meets; runs over every name the factory knows.
#include "storage/policy/eviction_policy.h"

#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "storage/policy/policies.h"

namespace kvstash::storage {
namespace {

class EvictionPolicyContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto p = CreateEvictionPolicy(GetParam());
    ASSERT_TRUE(p.ok()) << p.status();
    policy_ = *std::move(p);
    hooks_.resize(8);
    for (size_t i = 0; i < hooks_.size(); ++i) {
      hooks_[i].size_bytes = 100;
      hooks_[i].key_hash = 1000 + i;
      policy_->OnInsert(&hooks_[i]);
    }
  }
  static bool Any(const PolicyHook*) { return true; }
  PolicyHook* FirstVisited() const {
    const PolicyHook* first = nullptr;
    policy_->VisitColdest([&](const PolicyHook* h) {
      first = h;
      return false;
    });
    return const_cast<PolicyHook*>(first);
  }
  std::vector<const PolicyHook*> Visited() const {
    std::vector<const PolicyHook*> out;
    policy_->VisitColdest([&](const PolicyHook* h) {
      out.push_back(h);
      return true;
    });
    return out;
  }

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
  policy_->OnAccess(&hooks_[5]);
  policy_->OnAccess(&hooks_[5]);
  EXPECT_EQ(policy_->PickVictim([&](const PolicyHook* h) { return h == only; }), only);
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

TEST_P(EvictionPolicyContractTest, VisitColdestSeesEveryEntryOnceWithoutChangingState) {
  policy_->OnAccess(&hooks_[2]);
  policy_->OnAccess(&hooks_[6]);
  policy_->OnAccess(&hooks_[6]);
  const std::vector<const PolicyHook*> first = Visited();
  ASSERT_EQ(first.size(), hooks_.size());
  std::vector<int> seen(hooks_.size(), 0);
  for (const PolicyHook* h : first) ++seen[h - hooks_.data()];
  EXPECT_EQ(seen, std::vector<int>(hooks_.size(), 1));
  EXPECT_EQ(Visited(), first);  // a second walk sees the same: nothing moved
  int calls = 0;
  policy_->VisitColdest([&](const PolicyHook*) { return ++calls < 3; });
  EXPECT_EQ(calls, 3);  // stops when told
}

TEST_P(EvictionPolicyContractTest, VisitColdestStartsWithTheNextVictim) {
  // Fresh entries, read entries and erased ones: the cleaner's first pick is the victim.
  policy_->OnAccess(&hooks_[0]);
  policy_->OnAccess(&hooks_[3]);
  policy_->OnErase(&hooks_[7]);
  for (int round = 0; round < 6; ++round) {
    PolicyHook* predicted = FirstVisited();
    PolicyHook* victim = policy_->PickVictim(Any);
    ASSERT_NE(victim, nullptr);
    EXPECT_EQ(predicted, victim) << "round " << round;
    policy_->OnErase(victim);
  }
}

TEST_P(EvictionPolicyContractTest, PickingTwiceWithoutEvictingPicksTheSameVictim) {
  // The index asks every shard for a candidate and evicts from one only.
  policy_->OnAccess(&hooks_[0]);
  policy_->OnAccess(&hooks_[4]);
  PolicyHook* first = policy_->PickVictim(Any);
  const uint64_t rank = policy_->VictimRank(first);
  EXPECT_EQ(policy_->PickVictim(Any), first);
  EXPECT_EQ(policy_->VictimRank(first), rank);
}

TEST_P(EvictionPolicyContractTest, RefusedEntriesKeepTheirOrderAndRanks) {
  // A tenant-filtered eviction or leased entries refuse everything: nothing may age.
  policy_->OnAccess(&hooks_[1]);
  policy_->OnAccess(&hooks_[2]);
  policy_->OnAccess(&hooks_[2]);
  policy_->OnErase(policy_->PickVictim(Any));  // moves read entries on (e.g. small -> main)
  for (int i : {1, 2, 5, 6}) policy_->OnAccess(&hooks_[i]);
  policy_->OnAccess(&hooks_[6]);
  auto snapshot = [&] {
    std::vector<std::pair<const PolicyHook*, uint64_t>> out;
    for (const PolicyHook* h : Visited()) out.emplace_back(h, policy_->VictimRank(h));
    return out;
  };
  const auto before = snapshot();
  EXPECT_EQ(policy_->PickVictim([](const PolicyHook*) { return false; }), nullptr);
  EXPECT_EQ(snapshot(), before);
}

TEST_P(EvictionPolicyContractTest, ChildCountChangesKeepEveryEntryEvictable) {
  hooks_[1].children = 1;
  policy_->OnChildrenChanged(&hooks_[1]);
  hooks_[2].children = 2;
  policy_->OnChildrenChanged(&hooks_[2]);
  hooks_[2].children = 0;
  policy_->OnChildrenChanged(&hooks_[2]);
  size_t evicted = 0;
  while (PolicyHook* v = policy_->PickVictim(Any)) {
    policy_->OnErase(v);
    ++evicted;
  }
  EXPECT_EQ(evicted, hooks_.size());
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, EvictionPolicyContractTest,
                         ::testing::ValuesIn(KnownEvictionPolicies()));

TEST(EvictionPolicyFactoryTest, KnowsEveryPolicy) {
  EXPECT_EQ(KnownEvictionPolicies(),
            (std::vector<std::string>{"lru", "s3fifo", "tinylfu", "chain"}));
}

TEST(EvictionPolicyFactoryTest, UnknownNameListsKnownOnes) {
  auto p = CreateEvictionPolicy("fifo-ish");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  for (const std::string& name : KnownEvictionPolicies()) {
    EXPECT_NE(p.status().message().find(name), absl::string_view::npos) << name;
  }
}

TEST(PolicyClockBatchTest, AccessesOfOneBatchShareTheOutermostReading) {
  uint64_t batch_reading = 0;
  {
    const PolicyClockBatch batch;
    batch_reading = PolicyClockNanos();
    absl::SleepFor(absl::Milliseconds(2));
    EXPECT_EQ(PolicyClockNanos(), batch_reading);
    {
      const PolicyClockBatch nested;
      EXPECT_EQ(PolicyClockNanos(), batch_reading);
    }
    EXPECT_EQ(PolicyClockNanos(), batch_reading);
    // Another thread reads the clock itself.
    uint64_t other = 0;
    std::thread([&other] { other = PolicyClockNanos(); }).join();
    EXPECT_GT(other, batch_reading);
  }
  EXPECT_GT(PolicyClockNanos(), batch_reading);  // outside: the clock again
}

TEST(HookListTest, InsertsNextToAListedHook) {
  HookList list;
  PolicyHook a, b, c, d;
  list.PushFront(&b);
  list.InsertBefore(&b, &a);  // a b
  list.InsertAfter(&b, &d);   // a b d
  list.InsertAfter(&b, &c);   // a b c d
  std::vector<PolicyHook*> order;
  for (PolicyHook* h = list.front(); h != nullptr; h = list.next(h)) order.push_back(h);
  EXPECT_EQ(order, (std::vector<PolicyHook*>{&a, &b, &c, &d}));
}

}  // namespace
}  // namespace kvstash::storage
