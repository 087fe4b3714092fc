// The Prometheus text exposition format (version 0.0.4): a snapshot data model of metric
// families and the renderer that turns it into the text a scraper reads.
//
//   Family f{"kvstash_gets_total", "Chunk gets.", MetricType::kCounter};
//   f.samples.push_back({{{"tier", "dram"}}, 42});
//   std::string text = RenderText({f});
//
// Rendering follows the format's rules: one HELP and one TYPE line per family; label values
// escape \ " and newline; HELP text escapes \ and newline; a histogram becomes cumulative
// `_bucket{le="..."}` lines ending with le="+Inf", then `_sum` and `_count`.
//
// Thread-safety: plain values and stateless functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace kvstash::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// Label name/value pairs, rendered in this order.
using Labels = std::vector<std::pair<std::string, std::string>>;

// One histogram's state. `bucket_counts[i]` counts observations in
// (upper_bounds[i-1], upper_bounds[i]]; the last entry (one past the bounds) counts those
// above every bound. Counts are per bucket here; the renderer makes them cumulative.
struct HistogramData {
  std::vector<double> upper_bounds;     // ascending, finite
  std::vector<uint64_t> bucket_counts;  // upper_bounds.size() + 1 entries
  double sum = 0;
};

struct Sample {
  Labels labels;
  double value = 0;         // counters and gauges
  HistogramData histogram;  // histograms
};

struct Family {
  std::string name;  // [a-zA-Z_:][a-zA-Z0-9_:]*
  std::string help;
  MetricType type = MetricType::kCounter;
  std::vector<Sample> samples;  // may be empty: HELP/TYPE are still written
};

// `\` -> `\\`, `"` -> `\"`, newline -> `\n`.
std::string EscapeLabelValue(absl::string_view value);
// `\` -> `\\`, newline -> `\n` (quotes stay as they are in HELP text).
std::string EscapeHelp(absl::string_view help);
// Integers as integers ("42"), others in shortest round-trip form ("0.25", "5e-05"),
// "+Inf", "-Inf", "NaN".
std::string FormatValue(double value);

// Appends one family in text format.
void AppendFamily(const Family& family, std::string* out);
// All families, in order; families that share a name are rendered as one (the first one's
// HELP and TYPE, then every sample).
std::string RenderText(absl::Span<const Family> families);

// The content type a /metrics response must carry.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace kvstash::metrics
