#include "bench/workload/placement_study.h"

#include <numeric>

#include "gtest/gtest.h"

namespace kvstash::bench::workload {
namespace {

constexpr uint32_t kChunk = 4;

// `n` chunks of tokens starting at `first`.
std::vector<int32_t> Tokens(int32_t first, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n) * kChunk);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Two sessions that send the same 64-chunk prompt, one after the other.
Trace RepeatedPrompt() {
  Trace trace;
  for (int i = 0; i < 2; ++i) {
    Session s;
    s.start_s = i;
    s.turns.push_back({.prompt = Tokens(0, 64)});
    trace.sessions.push_back(s);
  }
  return trace;
}

const KeyChain& Chain() {
  static const KeyChain* chain = new KeyChain(Key128{}, HashAlgo::kXxh3_128, kChunk);
  return *chain;
}

TEST(PlacementStudy, ChainUnitKeepsALookupOnOneMember) {
  const std::vector<PlacementResult> r =
      RunPlacementStudy(RepeatedPrompt(), Chain(), {3}, {{0}}, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].unit, "chain");
  EXPECT_EQ(r[0].lookups, 2u);
  EXPECT_EQ(r[0].hit_chunks, 64u);  // the second request finds the whole prompt
  EXPECT_EQ(r[0].chunks_stored, 64u);
  EXPECT_DOUBLE_EQ(r[0].lookup_members_mean, 1.0);
  EXPECT_DOUBLE_EQ(r[0].lookup_max_share_mean, 1.0);
  EXPECT_DOUBLE_EQ(r[0].hottest_share, 1.0);
  EXPECT_DOUBLE_EQ(r[0].requests_max_over_mean, 3.0);
  // Losing the chain's member loses every hit; losing another loses none.
  EXPECT_NEAR(r[0].hits_kept_after_loss, 2.0 / 3.0, 1e-9);
}

TEST(PlacementStudy, ChunkUnitSpreadsALookupOverEveryMember) {
  const std::vector<PlacementResult> r =
      RunPlacementStudy(RepeatedPrompt(), Chain(), {3, 8}, {{1}, {8}}, {});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].unit, "chunk");
  EXPECT_EQ(r[0].members, 3);
  EXPECT_DOUBLE_EQ(r[0].lookup_members_mean, 3.0);  // 64 keys miss no member of 3
  EXPECT_LT(r[0].lookup_max_share_mean, 0.6);
  EXPECT_LT(r[0].requests_max_over_mean, 1.5);
  EXPECT_DOUBLE_EQ(r[0].fetch_members_mean, 3.0);
  EXPECT_LT(r[0].hits_kept_after_loss, 0.2);  // a lost member cuts the chain early
  EXPECT_EQ(r[1].unit, "segment8");
  EXPECT_LE(r[1].lookup_members_mean, 3.0);
  EXPECT_EQ(r[2].members, 8);
  EXPECT_GT(r[2].lookup_members_mean, r[0].lookup_members_mean);
  EXPECT_LE(r[3].lookup_members_mean, 8.0);  // 8 segments, at most one member each
}

TEST(PlacementStudy, ReplicatedHotChunksSurviveALostMember) {
  Trace trace = RepeatedPrompt();
  for (int i = 0; i < 4; ++i) {  // the first chunk becomes the hottest
    Session s;
    s.start_s = 2 + i;
    s.turns.push_back({.prompt = Tokens(0, 1)});
    trace.sessions.push_back(s);
  }
  const std::vector<PlacementResult> r =
      RunPlacementStudy(trace, Chain(), {3}, {{1, 1}, {1, 3}}, {});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].unit, "chunk+hot3");
  // 64 chunks: the hottest 1% is the first chunk, on every member: no member's loss cuts
  // the chain before its second chunk.
  EXPECT_EQ(r[1].chunks_stored, r[0].chunks_stored + 2);
  EXPECT_GT(r[1].hits_kept_after_loss, r[0].hits_kept_after_loss);
}

TEST(PlacementStudy, NamesUnitsAndMembers) {
  EXPECT_EQ(PlacementUnit{0}.Name(), "chain");
  EXPECT_EQ(PlacementUnit{1}.Name(), "chunk");
  EXPECT_EQ(PlacementUnit{16}.Name(), "segment16");
  EXPECT_EQ((PlacementUnit{1, 2}.Name()), "chunk+hot2");
  EXPECT_EQ(StudyMemberIds(2), (std::vector<std::string>{"kvstash-0", "kvstash-1"}));
}

}  // namespace
}  // namespace kvstash::bench::workload
