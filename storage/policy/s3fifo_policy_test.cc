#include "storage/policy/s3fifo_policy.h"

#include <vector>

#include "gtest/gtest.h"
#include "storage/policy/policy_test_util.h"

namespace kvstash::storage {
namespace {

using testing::EvictOne;
using testing::Hooks;

TEST(S3FifoPolicyTest, OneHitScanDoesNotEvictReadMainEntries) {
  S3FifoPolicy p;
  std::vector<PolicyHook> hot = Hooks(3, 1);
  for (PolicyHook& h : hot) p.OnInsert(&h);
  p.OnAccess(&hot[0]);
  p.OnAccess(&hot[1]);
  // Read entries leave the small queue for main as the eviction passes them.
  EXPECT_EQ(EvictOne(p), &hot[2]);
  p.OnAccess(&hot[0]);
  std::vector<PolicyHook> scan = Hooks(20, 100);
  for (PolicyHook& h : scan) p.OnInsert(&h);
  for (size_t i = 0; i + 1 < scan.size(); ++i) {
    PolicyHook* v = EvictOne(p);
    ASSERT_NE(v, nullptr);
    EXPECT_TRUE(v != &hot[0] && v != &hot[1]) << "evicted a main entry at " << i;
  }
}

TEST(S3FifoPolicyTest, GhostKeyReturnsToMain) {
  S3FifoPolicy p;
  std::vector<PolicyHook> hooks = Hooks(4, 1);
  for (PolicyHook& h : hooks) p.OnInsert(&h);
  PolicyHook* first = EvictOne(p);
  ASSERT_EQ(first, &hooks[0]);  // unread: evicted from small, remembered as a ghost
  PolicyHook again;
  again.size_bytes = 100;
  again.key_hash = hooks[0].key_hash;
  p.OnInsert(&again);
  // Back in main, it now outlives the small queue's unread entries.
  std::vector<PolicyHook*> order;
  while (PolicyHook* v = EvictOne(p)) order.push_back(v);
  EXPECT_EQ(order, (std::vector<PolicyHook*>{&hooks[1], &hooks[2], &hooks[3], &again}));
}

TEST(S3FifoPolicyTest, MainReinsertsReadEntriesOncePerRead) {
  S3FifoPolicy p;
  std::vector<PolicyHook> hooks = Hooks(3, 1);
  for (PolicyHook& h : hooks) p.OnInsert(&h);
  for (PolicyHook& h : hooks) p.OnAccess(&h);
  // All three move to main on the first pick (not evicted); then the one read again
  // outlives the rest.
  p.PickVictim(testing::AcceptAll);
  p.OnAccess(&hooks[0]);
  std::vector<PolicyHook*> order;
  while (PolicyHook* v = EvictOne(p)) order.push_back(v);
  EXPECT_EQ(order, (std::vector<PolicyHook*>{&hooks[1], &hooks[2], &hooks[0]}));
}

TEST(S3FifoPolicyTest, SmallQueueVictimsRankBelowMainVictims) {
  S3FifoPolicy small_heavy;  // only fresh entries: the small queue is over its share
  std::vector<PolicyHook> fresh = Hooks(2, 1);
  for (PolicyHook& h : fresh) small_heavy.OnInsert(&h);
  S3FifoPolicy main_only;  // an entry read earlier, now in main
  std::vector<PolicyHook> old = Hooks(2, 10);
  for (PolicyHook& h : old) main_only.OnInsert(&h);
  main_only.OnAccess(&old[0]);
  EXPECT_EQ(EvictOne(main_only), &old[1]);
  PolicyHook* main_victim = main_only.PickVictim(testing::AcceptAll);
  ASSERT_EQ(main_victim, &old[0]);
  PolicyHook* small_victim = small_heavy.PickVictim(testing::AcceptAll);
  ASSERT_EQ(small_victim, &fresh[0]);
  // Though inserted later, the fresh entry goes first across instances.
  EXPECT_LT(small_heavy.VictimRank(small_victim), main_only.VictimRank(main_victim));
}

}  // namespace
}  // namespace kvstash::storage
