// A Prometheus-like scraper for the benchmark: a thread that fetches `GET /metrics` from
// kvstashd's metrics endpoint every interval (a fresh HTTP/1.0 connection each time, as
// Prometheus' default client does when keep-alive is off), so a run can compare the data
// path's throughput with and without scraping.
//
// Thread-safety: Start/Stop/Stats are called from one thread (the benchmark's main
// thread); the scrape loop runs on a thread of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace kvstash::bench {

struct ScrapeStats {
  uint64_t scrapes = 0;   // successful fetches (HTTP 200, non-empty body)
  uint64_t failures = 0;  // connect/read errors or a status other than 200
  std::string first_failure;
  double p50_ms = 0;  // fetch latency, connect to last byte
  double max_ms = 0;
  uint64_t last_bytes = 0;  // response size of the last successful fetch
};

class Scraper {
 public:
  // address: "HOST:PORT" of the metrics endpoint. interval_ms > 0.
  Scraper(std::string address, int interval_ms)
      : address_(std::move(address)), interval_ms_(interval_ms) {}
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;
  ~Scraper() { Stop(); }

  // Starts the loop; the first fetch happens at once. Resets the stats.
  void Start();
  // Stops the loop and joins it (an in-flight fetch finishes first). Idempotent.
  void Stop();
  // Totals since the last Start().
  ScrapeStats Stats();

 private:
  void Loop();
  void FetchOnce();

  const std::string address_;
  const int interval_ms_;
  std::thread thread_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
  ScrapeStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::bench
