// The scrape benchmark (`kvstash_bench --scrape`): does Prometheus scraping slow the data
// path? One kvstashd (DRAM tier) runs every get and put cell of the sweep twice per round,
// once alone and once while a scraper fetches /metrics every --scrape_ms, the two in
// alternating order. The report shows both medians, their ratio and the spread of each
// variant over the rounds (this run's noise), so "within noise" is judged on numbers
// measured in the same run.
//
// Thread-safety: RunScrapeSuite is called once, from the main thread.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "bench/scraper.h"

namespace kvstash::bench {

// Sample::system of the cells measured while the scraper runs.
inline constexpr char kScrapedSystem[] = "kvstash+scrape";

struct ScrapeSuiteOutput {
  std::vector<Sample> samples;  // system "kvstash" (no scrape) and kScrapedSystem
  ScrapeStats scrape;           // summed over every scraped cell
  std::vector<std::string> notes;
};

// Uses config.sizes, clients, rounds, limits, budget_bytes, working_set_bytes,
// kvstashd_path, kvstash_sets and keep_scratch. scrape_ms > 0.
absl::StatusOr<ScrapeSuiteOutput> RunScrapeSuite(const RunConfig& config, int scrape_ms,
                                                 std::ostream& progress);

void PrintScrapeReport(std::ostream& out, const ScrapeSuiteOutput& result, int scrape_ms);

// The median rows as JSON lines: system "kvstash", tier "dram", and "scrape_ms" (0 for
// the unscraped cells).
absl::Status WriteScrapeJsonLines(const std::string& path, const ScrapeSuiteOutput& result,
                                  int scrape_ms);

}  // namespace kvstash::bench
