#include "bench/workload/trace.h"

#include "gtest/gtest.h"

namespace kvstash::bench::workload {
namespace {

TraceOptions Small(uint64_t seed) {
  TraceOptions o;
  o.seed = seed;
  o.chunk_tokens = 16;
  o.short_form = true;
  o.scale = 0.1;
  return o;
}

bool SameTrace(const Trace& a, const Trace& b) {
  if (a.sessions.size() != b.sessions.size()) return false;
  for (size_t s = 0; s < a.sessions.size(); ++s) {
    const Session& x = a.sessions[s];
    const Session& y = b.sessions[s];
    if (x.start_s != y.start_s || x.turns.size() != y.turns.size()) return false;
    for (size_t t = 0; t < x.turns.size(); ++t) {
      if (x.turns[t].prompt != y.turns[t].prompt || x.turns[t].output != y.turns[t].output ||
          x.turns[t].delay_s != y.turns[t].delay_s) {
        return false;
      }
    }
  }
  return true;
}

class TraceTest : public testing::TestWithParam<WorkloadKind> {};

TEST_P(TraceTest, SameSeedSameTraceOtherSeedOtherTrace) {
  const Trace a = *GenerateTrace(GetParam(), Small(7));
  const Trace b = *GenerateTrace(GetParam(), Small(7));
  const Trace c = *GenerateTrace(GetParam(), Small(8));
  EXPECT_GT(a.Requests(), 0u);
  EXPECT_TRUE(SameTrace(a, b));
  EXPECT_FALSE(SameTrace(a, c));
}

TEST_P(TraceTest, SessionsStartInOrderAndTurnsHaveTokens) {
  const Trace t = *GenerateTrace(GetParam(), Small(3));
  for (size_t s = 0; s < t.sessions.size(); ++s) {
    if (s > 0) {
      EXPECT_GE(t.sessions[s].start_s, t.sessions[s - 1].start_s);
    }
    for (const Turn& turn : t.sessions[s].turns) {
      EXPECT_FALSE(turn.prompt.empty());
      EXPECT_FALSE(turn.output.empty());
      EXPECT_GE(turn.delay_s, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, TraceTest, testing::ValuesIn(AllWorkloads()),
                         [](const testing::TestParamInfo<WorkloadKind>& info) {
                           return std::string(WorkloadName(info.param));
                         });

TEST(TraceShapeTest, ChatResendsTheWholeHistory) {
  const Trace t = *GenerateTrace(WorkloadKind::kChat, Small(1));
  for (const Session& s : t.sessions) {
    for (size_t i = 1; i < s.turns.size(); ++i) {
      std::vector<int32_t> before = s.turns[i - 1].prompt;
      before.insert(before.end(), s.turns[i - 1].output.begin(), s.turns[i - 1].output.end());
      ASSERT_GT(s.turns[i].prompt.size(), before.size());
      EXPECT_TRUE(std::equal(before.begin(), before.end(), s.turns[i].prompt.begin()));
    }
  }
}

TEST(TraceShapeTest, AnalyticsSharesOneInstructionPrefix) {
  const Trace t = *GenerateTrace(WorkloadKind::kAnalytics, Small(1));
  ASSERT_GT(t.sessions.size(), 1u);
  const auto& first = t.sessions[0].turns[0].prompt;
  for (const Session& s : t.sessions) {
    EXPECT_TRUE(std::equal(first.begin(), first.begin() + 128, s.turns[0].prompt.begin()));
    EXPECT_LE(s.turns[0].output.size(), 8u);
  }
}

TEST(TraceShapeTest, OnlyAgentsKnowTheirPauses) {
  const Trace agents = *GenerateTrace(WorkloadKind::kAgents, Small(1));
  EXPECT_GT(agents.sessions[0].turns[0].known_pause_s, 0);
  EXPECT_EQ(agents.sessions[0].turns[0].known_pause_s, agents.sessions[0].turns[1].delay_s);
  const Trace chat = *GenerateTrace(WorkloadKind::kChat, Small(1));
  EXPECT_EQ(chat.sessions[0].turns[0].known_pause_s, 0);
}

TEST(TraceShapeTest, BurstyArrivalsVaryMoreThanPoisson) {
  auto cv = [](const Trace& t) {
    std::vector<double> gaps;
    for (size_t s = 1; s < t.sessions.size(); ++s) {
      gaps.push_back(t.sessions[s].start_s - t.sessions[s - 1].start_s);
    }
    double mean = 0, var = 0;
    for (double g : gaps) mean += g / gaps.size();
    for (double g : gaps) var += (g - mean) * (g - mean) / gaps.size();
    return std::sqrt(var) / mean;
  };
  TraceOptions o = Small(5);
  o.scale = 1;
  const double poisson = cv(*GenerateTrace(WorkloadKind::kAnalytics, o));
  o.arrivals = Arrivals::kBursty;
  const double bursty = cv(*GenerateTrace(WorkloadKind::kAnalytics, o));
  EXPECT_GT(bursty, 2 * poisson);
}

TEST(TraceShapeTest, BadOptionsAreRejected) {
  TraceOptions o = Small(1);
  o.chunk_tokens = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(GenerateTrace(WorkloadKind::kChat, o).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseWorkload("poetry").status()));
}

}  // namespace
}  // namespace kvstash::bench::workload
