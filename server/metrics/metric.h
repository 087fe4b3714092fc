// Lock-free metric cells for hot paths: Counter, Gauge and a fixed-bucket Histogram.
//
// Updates are single relaxed atomic read-modify-writes (a histogram: two), so data-path
// threads never take a lock or allocate. Readers (the scrape) see each cell's latest value;
// cells are not read as one consistent snapshot, which Prometheus tolerates (the next
// scrape catches up).
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "server/metrics/exposition.h"

namespace kvstash::metrics {

class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  int64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Observations are integers in a base unit (e.g. microseconds); Snapshot() divides bounds
// and sum by `per_unit` to get the exported unit (1e6 for microseconds to seconds:
// dividing keeps 100 us exactly 0.0001, where multiplying by 1e-6 would not).
class Histogram {
 public:
  // REQUIRES: `upper_bounds` ascending and non-empty.
  explicit Histogram(absl::Span<const uint64_t> upper_bounds);
  Histogram(Histogram&&) = default;
  Histogram& operator=(Histogram&&) = default;

  void Observe(uint64_t value);
  HistogramData Snapshot(double per_unit) const;

 private:
  std::vector<uint64_t> bounds_;
  // bounds_.size() + 1 bucket counts, then the sum of observations.
  std::unique_ptr<std::atomic<uint64_t>[]> cells_;
};

}  // namespace kvstash::metrics
