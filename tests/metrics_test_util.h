// Helpers for the tests of the metrics endpoint and the deploy/ files: the daemon's
// metrics address, the metric names a scrape exports, the dashboard's queries, and a
// minimal client of Prometheus' HTTP query API.
//
// Thread-safety: free functions; safe from any thread.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/daemon_process.h"

namespace kvstash::testing {

// The `metrics=HOST:PORT` line of the daemon's ready file.
absl::StatusOr<std::string> MetricsAddress(const DaemonProcess& daemon);
// GET http://`address`/metrics; the body, or an error for a non-200 answer.
absl::StatusOr<std::string> Scrape(const std::string& address);

// The value of the sample `series` (name and labels, as the exposition writes them) in a
// scrape of `daemon`; NOT_FOUND when the scrape has no such line.
absl::StatusOr<double> MetricValue(const DaemonProcess& daemon, const std::string& series);

// Sample names a scrape can contain: each `# TYPE` family, and for histograms its
// _bucket, _sum and _count series.
std::set<std::string> ExportedNames(const std::string& exposition);
// Every `kvstash_...` token in `text` (metric names referenced by a query or a file).
std::set<std::string> MetricTokens(const std::string& text);

// The whole file; empty when it cannot be read.
std::string ReadFile(const std::string& path);

struct PanelQuery {
  std::string title;
  std::string expr;
};
// Parses the Grafana dashboard JSON with python3's json module (so a parse error fails
// here) and lists every panel target's expression. UNAVAILABLE when python3 is missing.
absl::StatusOr<std::vector<PanelQuery>> DashboardQueries(const std::string& path);

// One sample of an instant-query result: the series' labels as JSON text and its value.
struct QuerySample {
  std::string metric;
  double value = 0;
};
// GET /api/v1/query?query=`promql`&time=`unix_time` on the Prometheus at `address`.
absl::StatusOr<std::vector<QuerySample>> PromQuery(const std::string& address,
                                                   const std::string& promql, double unix_time);

// "$__rate_interval" -> `window`, "$instance" -> ".*": a dashboard query made runnable.
std::string Instantiate(std::string expr, const std::string& window);

}  // namespace kvstash::testing
