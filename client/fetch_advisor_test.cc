#include "kvstash/fetch_advisor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace kvstash {
namespace {

using T = ChunkTier;

// Round numbers: 1000 bytes per token, 10000 tokens/s, no attention term, no latency;
// so recomputing 100 tokens takes 10 ms and moving their 100 kB at 1 GB/s 0.1 ms.
FetchAdvisorOptions SimpleOptions() {
  FetchAdvisorOptions o;
  o.prefill.tokens_per_s = 10000;
  o.prefill.attention_s_per_token2 = 0;
  o.kv_bytes_per_token = 1000;
  o.gpu_bytes_per_s = 1e9;
  o.dram_bytes_per_s = 1e9;
  o.nvme_bytes_per_s = 1e9;
  o.fixed_fetch_s = 0;
  return o;
}

std::unique_ptr<FetchAdvisor> MakeAdvisor(const FetchAdvisorOptions& o) {
  auto advisor = FetchAdvisor::Create(o);
  EXPECT_TRUE(advisor.ok()) << advisor.status();
  return advisor.ok() ? std::move(*advisor) : nullptr;
}

// A fetch of `bytes` at `bytes_per_s`, timed as the caller would see it.
double FetchTime(const FetchAdvisorOptions& o, double bytes, double bytes_per_s) {
  return o.fixed_fetch_s + bytes / bytes_per_s;
}

TEST(PrefillModelTest, LinearTermPlusCausalAttention) {
  PrefillModel m{.tokens_per_s = 1000, .attention_s_per_token2 = 1e-6};
  EXPECT_DOUBLE_EQ(m.Seconds(0, 500), 0);
  // 100 / 1000 + 1e-6 x 100 x (400 + 101 / 2)
  EXPECT_DOUBLE_EQ(m.Seconds(100, 400), 0.1 + 1e-6 * 100 * 450.5);
  EXPECT_GT(m.Seconds(100, 4000), m.Seconds(100, 400));
}

TEST(FetchAdvisorTest, DefaultsNeedOnlyTheModelSize) {
  FetchAdvisorOptions o;
  EXPECT_FALSE(o.Validate().ok());
  o.kv_bytes_per_token = 128 << 10;
  EXPECT_TRUE(o.Validate().ok());
  auto advisor = MakeAdvisor(o);
  ASSERT_NE(advisor, nullptr);
  EXPECT_DOUBLE_EQ(advisor->BandwidthBytesPerSecond(T::kDram), o.dram_bytes_per_s);
  EXPECT_DOUBLE_EQ(advisor->BandwidthBytesPerSecond(T::kNvme), o.nvme_bytes_per_s);
  EXPECT_DOUBLE_EQ(advisor->BandwidthBytesPerSecond(T::kGpu), o.gpu_bytes_per_s);
  EXPECT_EQ(advisor->BandwidthBytesPerSecond(T::kNone), 0);
  // A 256-token Llama-3-8B chunk from DRAM at the prior beats recomputing it.
  EXPECT_TRUE(advisor->ShouldFetch(256, T::kDram));
  // The one-line form of the header's example.
  EXPECT_TRUE(FetchAdvisor::Create({.kv_bytes_per_token = 128 << 10}).ok());
}

TEST(FetchAdvisorTest, BadOptionsAreRefusedNamingTheField) {
  using Setter = std::function<void(FetchAdvisorOptions&, double)>;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> not_positive = {0, -1, nan, inf};
  const std::vector<double> negative = {-1, nan, inf};
  struct Case {
    std::string field;
    Setter set;
    std::vector<double> bad_values;
  };
  const std::vector<Case> cases = {
      {"prefill.tokens_per_s", [](auto& o, double v) { o.prefill.tokens_per_s = v; }, not_positive},
      {"prefill.attention_s_per_token2",
       [](auto& o, double v) { o.prefill.attention_s_per_token2 = v; }, negative},
      {"gpu_bytes_per_s", [](auto& o, double v) { o.gpu_bytes_per_s = v; }, not_positive},
      {"dram_bytes_per_s", [](auto& o, double v) { o.dram_bytes_per_s = v; }, not_positive},
      {"nvme_bytes_per_s", [](auto& o, double v) { o.nvme_bytes_per_s = v; }, not_positive},
      {"fixed_fetch_s", [](auto& o, double v) { o.fixed_fetch_s = v; }, negative},
      {"fetch_margin", [](auto& o, double v) { o.fetch_margin = v; }, not_positive},
      {"ewma_weight", [](auto& o, double v) { o.ewma_weight = v; }, {0, -1, nan, 1.5}},
      {"kv_bytes_per_token", [](auto& o, double) { o.kv_bytes_per_token = 0; }, {0}},
  };
  for (const Case& c : cases) {
    for (double value : c.bad_values) {
      FetchAdvisorOptions o = SimpleOptions();
      c.set(o, value);
      auto advisor = FetchAdvisor::Create(o);
      ASSERT_FALSE(advisor.ok()) << c.field << " = " << value;
      EXPECT_EQ(advisor.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(advisor.status().message().find(c.field), absl::string_view::npos)
          << advisor.status();
    }
  }
  // The edges that are allowed.
  FetchAdvisorOptions o = SimpleOptions();
  o.ewma_weight = 1;
  o.prefill.attention_s_per_token2 = 0;
  o.fixed_fetch_s = 0;
  EXPECT_TRUE(o.Validate().ok());
}

TEST(FetchAdvisorTest, FirstObservationReplacesPriorThenEwmaConverges) {
  FetchAdvisorOptions o = SimpleOptions();
  o.fixed_fetch_s = 1e-3;
  auto advisor = MakeAdvisor(o);
  ASSERT_NE(advisor, nullptr);
  const double bytes = 64e6;
  advisor->RecordFetch(T::kDram, bytes, FetchTime(o, bytes, 4e9));
  EXPECT_NEAR(advisor->BandwidthBytesPerSecond(T::kDram), 4e9, 1);
  EXPECT_EQ(advisor->Observations(T::kDram), 1u);

  // One step at weight 0.2 moves seconds per byte a fifth of the way to the observation.
  advisor->RecordFetch(T::kDram, bytes, FetchTime(o, bytes, 1e9));
  const double spb = 1 / 4e9 + 0.2 * (1 / 1e9 - 1 / 4e9);
  EXPECT_NEAR(advisor->BandwidthBytesPerSecond(T::kDram), 1 / spb, 1);

  double previous_gap = std::abs(advisor->BandwidthBytesPerSecond(T::kDram) - 1e9);
  for (int i = 0; i < 100; ++i) {
    advisor->RecordFetch(T::kDram, bytes, FetchTime(o, bytes, 1e9));
    const double gap = std::abs(advisor->BandwidthBytesPerSecond(T::kDram) - 1e9);
    EXPECT_LE(gap, previous_gap);
    previous_gap = gap;
  }
  EXPECT_NEAR(advisor->BandwidthBytesPerSecond(T::kDram), 1e9, 1e9 * 1e-6);
  // Other tiers keep their priors.
  EXPECT_DOUBLE_EQ(advisor->BandwidthBytesPerSecond(T::kNvme), o.nvme_bytes_per_s);
  EXPECT_EQ(advisor->Observations(T::kNvme), 0u);
}

TEST(FetchAdvisorTest, ObservationsWithoutBandwidthInformationAreIgnored) {
  FetchAdvisorOptions o = SimpleOptions();
  o.fixed_fetch_s = 1e-3;
  auto advisor = MakeAdvisor(o);
  ASSERT_NE(advisor, nullptr);
  advisor->RecordFetch(T::kNone, 1000, 1);
  advisor->RecordFetch(T::kDram, 0, 1);
  advisor->RecordFetch(T::kDram, 1000, std::numeric_limits<double>::quiet_NaN());
  advisor->RecordFetch(T::kDram, 1000, std::numeric_limits<double>::infinity());
  advisor->RecordFetch(T::kDram, 1000, -1);
  advisor->RecordFetch(T::kDram, 1000, o.fixed_fetch_s);  // no slower than the latency
  EXPECT_EQ(advisor->Observations(T::kDram), 0u);
  EXPECT_DOUBLE_EQ(advisor->BandwidthBytesPerSecond(T::kDram), o.dram_bytes_per_s);
}

TEST(FetchAdvisorTest, ThrottledTierFlipsTheDecisionAndRecovers) {
  FetchAdvisorOptions o = SimpleOptions();
  auto advisor = MakeAdvisor(o);
  ASSERT_NE(advisor, nullptr);
  // 100 tokens: recompute 10 ms; fetch 0.1 ms at 1 GB/s.
  EXPECT_TRUE(advisor->ShouldFetch(100, T::kNvme));
  EXPECT_DOUBLE_EQ(advisor->FetchSeconds(100, T::kNvme), 1e-4);
  EXPECT_DOUBLE_EQ(advisor->RecomputeSeconds(100, 0), 1e-2);

  // Throttled to 1 MB/s the same fetch takes 100 ms.
  const double bytes = 1e6;
  advisor->RecordFetch(T::kNvme, bytes, FetchTime(o, bytes, 1e6));
  EXPECT_FALSE(advisor->ShouldFetch(100, T::kNvme));
  EXPECT_TRUE(advisor->ShouldFetch(100, T::kDram));
  EXPECT_FALSE(advisor->ShouldFetch(100, T::kNone));

  // Fast again: the average follows within a few dozen fetches.
  int fetches = 0;
  while (!advisor->ShouldFetch(100, T::kNvme) && fetches < 1000) {
    advisor->RecordFetch(T::kNvme, bytes, FetchTime(o, bytes, 1e9));
    ++fetches;
  }
  EXPECT_TRUE(advisor->ShouldFetch(100, T::kNvme));
  EXPECT_GT(fetches, 1);
  EXPECT_LT(fetches, 100);
}

TEST(FetchAdvisorTest, MarginAndContextShiftTheBreakEven) {
  FetchAdvisorOptions o = SimpleOptions();
  o.nvme_bytes_per_s = 20e6;  // 100 tokens: 5 ms to fetch, 10 ms to recompute
  auto advisor = MakeAdvisor(o);
  ASSERT_NE(advisor, nullptr);
  EXPECT_TRUE(advisor->ShouldFetch(100, T::kNvme));

  o.fetch_margin = 2.5;  // counts the fetch as 12.5 ms
  auto cautious = MakeAdvisor(o);
  ASSERT_NE(cautious, nullptr);
  EXPECT_FALSE(cautious->ShouldFetch(100, T::kNvme));

  // With an attention term, tokens after a long context cost more to recompute.
  o.prefill.attention_s_per_token2 = 1e-7;  // 100 tokens after 10000 more: +0.1 s
  auto long_context = MakeAdvisor(o);
  ASSERT_NE(long_context, nullptr);
  EXPECT_FALSE(long_context->ShouldFetch(100, T::kNvme, 0));
  EXPECT_TRUE(long_context->ShouldFetch(100, T::kNvme, 10000));
}

TEST(FetchAdvisorTest, ChunksToFetchStopsBeforeASlowTier) {
  FetchAdvisorOptions o = SimpleOptions();
  o.fixed_fetch_s = 1e-4;
  o.nvme_bytes_per_s = 1e6;  // one 100-token chunk: 100 ms, ten times its recompute
  auto advisor = MakeAdvisor(o);
  ASSERT_NE(advisor, nullptr);
  const std::vector<T> tiers = {T::kDram, T::kGpu, T::kNvme, T::kDram, T::kDram};
  EXPECT_EQ(advisor->ChunksToFetch(tiers, 100, 1000), 2u);
  // All fast: every hit.
  EXPECT_EQ(advisor->ChunksToFetch({T::kDram, T::kDram, T::kDram}, 100, 1000), 3u);
  // A slow first chunk: recompute everything, even though fast chunks follow it.
  EXPECT_EQ(advisor->ChunksToFetch({T::kNvme, T::kDram}, 100, 1000), 0u);
  // A slow chunk is worth it when enough fast ones follow it: 100 ms + 12 x 0.1 ms to fetch
  // 13 chunks against 130 ms to recompute them.
  std::vector<T> many(13, T::kDram);
  many[0] = T::kNvme;
  EXPECT_EQ(advisor->ChunksToFetch(many, 100, 2000), 13u);
}

TEST(FetchAdvisorTest, ChunksToFetchAfterTheEnginesOwnPrefix) {
  FetchAdvisorOptions o = SimpleOptions();
  o.fixed_fetch_s = 1e-4;
  o.nvme_bytes_per_s = 1e6;  // one 100-token chunk: ~100 ms to fetch
  o.prefill.attention_s_per_token2 = 1e-7;
  auto advisor = MakeAdvisor(o);
  ASSERT_NE(advisor, nullptr);
  // Alone the chunk recomputes in ~10.5 ms; after 20000 tokens the engine holds, recomputing
  // it also attends to them (+200 ms) and fetching wins.
  EXPECT_EQ(advisor->ChunksToFetch({T::kNvme}, 100, 100), 0u);
  EXPECT_EQ(advisor->ChunksToFetch({T::kNvme}, 100, 100, 20000), 1u);
}

TEST(FetchAdvisorTest, ChunksToFetchBoundsAndAgreesWithShouldFetch) {
  FetchAdvisorOptions o = SimpleOptions();
  o.fixed_fetch_s = 1e-4;
  auto advisor = MakeAdvisor(o);
  ASSERT_NE(advisor, nullptr);
  EXPECT_EQ(advisor->ChunksToFetch({}, 100, 1000), 0u);
  EXPECT_EQ(advisor->ChunksToFetch({T::kDram}, 0, 1000), 0u);
  EXPECT_EQ(advisor->ChunksToFetch({T::kDram, T::kNone, T::kDram}, 100, 1000), 1u);
  // Only whole chunks inside the prompt: 250 tokens hold two.
  EXPECT_EQ(advisor->ChunksToFetch({T::kDram, T::kDram, T::kDram}, 100, 250), 2u);

  // One chunk, nothing after it: the same answer as ShouldFetch, at every bandwidth.
  for (double bw : {1e5, 1e6, 9e6, 1e7, 1.1e7, 1e8, 1e9}) {
    advisor->RecordFetch(T::kNvme, 1000000, FetchTime(o, 1e6, bw));
    advisor->RecordFetch(T::kNvme, 1000000, FetchTime(o, 1e6, bw));
    const bool fetch = advisor->ShouldFetch(100, T::kNvme);
    EXPECT_EQ(advisor->ChunksToFetch({T::kNvme}, 100, 100), fetch ? 1u : 0u) << bw;
  }
}

TEST(FetchAdvisorTest, ConcurrentRecordsAllCount) {
  auto advisor = MakeAdvisor(SimpleOptions());
  ASSERT_NE(advisor, nullptr);
  constexpr int kThreads = 4;
  constexpr int kEach = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        advisor->RecordFetch(T::kNvme, 1000000, 1e-3);  // 1 GB/s
        EXPECT_EQ(advisor->ChunksToFetch({T::kNvme}, 100, 100), 1u);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(advisor->Observations(T::kNvme), uint64_t{kThreads * kEach});
  EXPECT_NEAR(advisor->BandwidthBytesPerSecond(T::kNvme), 1e9, 1);
}

}  // namespace
}  // namespace kvstash
