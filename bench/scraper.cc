#include "bench/scraper.h"

#include <algorithm>
#include <chrono>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/metrics/http_server.h"
#include "testing/http_get.h"

namespace kvstash::bench {

void Scraper::Start() {
  Stop();
  {
    absl::MutexLock lock(&mu_);
    stop_ = false;
    stats_ = ScrapeStats{};
    latencies_ms_.clear();
  }
  thread_ = std::thread([this] { Loop(); });
}

void Scraper::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

ScrapeStats Scraper::Stats() {
  absl::MutexLock lock(&mu_);
  ScrapeStats out = stats_;
  std::vector<double> v = latencies_ms_;
  if (!v.empty()) {
    std::sort(v.begin(), v.end());
    out.p50_ms = v[v.size() / 2];
    out.max_ms = v.back();
  }
  return out;
}

// Fetches on a fixed schedule (not fixed gaps), like Prometheus' scrape interval.
void Scraper::Loop() {
  absl::Time next = absl::Now();
  for (;;) {
    FetchOnce();
    next += absl::Milliseconds(interval_ms_);
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithDeadline(absl::Condition(&stop_), next)) return;
  }
}

void Scraper::FetchOnce() {
  const auto begin = std::chrono::steady_clock::now();
  auto response = HttpGet(address_, "/metrics", /*timeout_ms=*/5000);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  absl::MutexLock lock(&mu_);
  std::string failure;
  if (!response.ok()) {
    failure = response.status().ToString();
  } else if (response->status != 200 || response->body.empty()) {
    failure = "HTTP status " + std::to_string(response->status);
  }
  if (!failure.empty()) {
    if (stats_.failures++ == 0) stats_.first_failure = failure;
    return;
  }
  ++stats_.scrapes;
  stats_.last_bytes = response->body.size();
  latencies_ms_.push_back(ms);
}

}  // namespace kvstash::bench
