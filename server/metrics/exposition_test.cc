#include "server/metrics/exposition.h"

#include <cmath>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/metrics/metric.h"
#include "server/metrics/registry.h"

namespace kvstash::metrics {
namespace {

TEST(ExpositionTest, GoldenCounterAndGauge) {
  Family gets{"kvstash_gets_total", "Chunk gets by result.", MetricType::kCounter, {}};
  gets.samples.push_back({{{"result", "hit"}, {"tier", "dram"}}, 42, {}});
  gets.samples.push_back({{{"result", "miss"}, {"tier", "none"}}, 7, {}});
  Family ready{"kvstash_ready", "1 when serving.", MetricType::kGauge, {}};
  ready.samples.push_back({{}, 1, {}});
  Family empty{"kvstash_empty", "No samples yet.", MetricType::kGauge, {}};
  EXPECT_EQ(RenderText({gets, ready, empty}),
            "# HELP kvstash_gets_total Chunk gets by result.\n"
            "# TYPE kvstash_gets_total counter\n"
            "kvstash_gets_total{result=\"hit\",tier=\"dram\"} 42\n"
            "kvstash_gets_total{result=\"miss\",tier=\"none\"} 7\n"
            "# HELP kvstash_ready 1 when serving.\n"
            "# TYPE kvstash_ready gauge\n"
            "kvstash_ready 1\n"
            "# HELP kvstash_empty No samples yet.\n"
            "# TYPE kvstash_empty gauge\n");
}

TEST(ExpositionTest, FamiliesOfOneNameShareOneHelpBlock) {
  Family grpc{"kvstash_sent_total", "Bytes sent.", MetricType::kCounter, {}};
  grpc.samples.push_back({{{"transport", "grpc"}}, 1, {}});
  Family ready{"kvstash_ready", "1 when serving.", MetricType::kGauge, {}};
  ready.samples.push_back({{}, 1, {}});
  Family ucx = grpc;
  ucx.samples = {{{{"transport", "ucx"}}, 2, {}}};
  EXPECT_EQ(RenderText({grpc, ready, ucx}),
            "# HELP kvstash_sent_total Bytes sent.\n"
            "# TYPE kvstash_sent_total counter\n"
            "kvstash_sent_total{transport=\"grpc\"} 1\n"
            "kvstash_sent_total{transport=\"ucx\"} 2\n"
            "# HELP kvstash_ready 1 when serving.\n"
            "# TYPE kvstash_ready gauge\n"
            "kvstash_ready 1\n");
}

TEST(ExpositionTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(EscapeHelp("say \"hi\"\\\n"), "say \"hi\"\\\\\\n");
  Family f{"m", "line1\nline2", MetricType::kGauge, {}};
  f.samples.push_back({{{"model", "llama \"3\"\\8b\n"}}, 1, {}});
  EXPECT_EQ(RenderText({f}),
            "# HELP m line1\\nline2\n"
            "# TYPE m gauge\n"
            "m{model=\"llama \\\"3\\\"\\\\8b\\n\"} 1\n");
}

TEST(ExpositionTest, FormatsValues) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(1e12), "1000000000000");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(5e-05), "5e-05");
  EXPECT_EQ(FormatValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatValue(NAN), "NaN");
}

TEST(ExpositionTest, HistogramBucketsAreCumulativeWithInf) {
  constexpr uint64_t kBoundsUs[] = {100, 1000, 10000};
  Histogram h(kBoundsUs);
  for (uint64_t v : {50, 100, 101, 999, 5000, 20000, 30000}) h.Observe(v);
  Family f{"kvstash_op_duration_seconds", "Latency.", MetricType::kHistogram, {}};
  f.samples.push_back({{{"op", "get"}}, 0, h.Snapshot(1e6)});
  EXPECT_EQ(RenderText({f}),
            "# HELP kvstash_op_duration_seconds Latency.\n"
            "# TYPE kvstash_op_duration_seconds histogram\n"
            "kvstash_op_duration_seconds_bucket{op=\"get\",le=\"0.0001\"} 2\n"
            "kvstash_op_duration_seconds_bucket{op=\"get\",le=\"0.001\"} 4\n"
            "kvstash_op_duration_seconds_bucket{op=\"get\",le=\"0.01\"} 5\n"
            "kvstash_op_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 7\n"
            "kvstash_op_duration_seconds_sum{op=\"get\"} 0.05625\n"
            "kvstash_op_duration_seconds_count{op=\"get\"} 7\n");
}

TEST(ExpositionTest, HistogramWithoutLabels) {
  constexpr uint64_t kBounds[] = {1};
  Histogram h(kBounds);
  h.Observe(3);
  Family f{"h", "x", MetricType::kHistogram, {}};
  f.samples.push_back({{}, 0, h.Snapshot(1)});
  EXPECT_EQ(RenderText({f}),
            "# HELP h x\n# TYPE h histogram\n"
            "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 1\nh_sum 3\nh_count 1\n");
}

TEST(MetricTest, ConcurrentUpdatesAreNotLost) {
  Counter c;
  Gauge g;
  constexpr uint64_t kBounds[] = {10};
  Histogram h(kBounds);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Add();
        g.Add(1);
        h.Observe(i % 20);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(c.Value(), 40000u);
  EXPECT_EQ(g.Value(), 40000);
  const HistogramData d = h.Snapshot(1);
  EXPECT_EQ(d.bucket_counts[0] + d.bucket_counts[1], 40000u);
  EXPECT_EQ(d.bucket_counts[0], 4u * 5500);  // 0..10 of every 20
}

TEST(RegistryTest, RunsCollectorsInOrder) {
  Registry r;
  r.Add([](std::vector<Family>* out) { out->push_back({"a", "first", MetricType::kGauge, {}}); });
  r.Add([](std::vector<Family>* out) { out->push_back({"b", "second", MetricType::kGauge, {}}); });
  EXPECT_EQ(r.Scrape(), "# HELP a first\n# TYPE a gauge\n# HELP b second\n# TYPE b gauge\n");
}

}  // namespace
}  // namespace kvstash::metrics
