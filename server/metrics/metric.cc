#include "server/metrics/metric.h"

#include <algorithm>

namespace kvstash::metrics {

Histogram::Histogram(absl::Span<const uint64_t> upper_bounds)
    : bounds_(upper_bounds.begin(), upper_bounds.end()),
      cells_(new std::atomic<uint64_t>[upper_bounds.size() + 2]) {
  for (size_t i = 0; i < bounds_.size() + 2; ++i) cells_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(uint64_t value) {
  // First bound >= value: buckets are "less than or equal" (le) in Prometheus.
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  cells_[bucket].fetch_add(1, std::memory_order_relaxed);
  cells_[bounds_.size() + 1].fetch_add(value, std::memory_order_relaxed);
}

HistogramData Histogram::Snapshot(double per_unit) const {
  HistogramData h;
  h.upper_bounds.reserve(bounds_.size());
  for (uint64_t b : bounds_) h.upper_bounds.push_back(static_cast<double>(b) / per_unit);
  h.bucket_counts.reserve(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    h.bucket_counts.push_back(cells_[i].load(std::memory_order_relaxed));
  }
  h.sum =
      static_cast<double>(cells_[bounds_.size() + 1].load(std::memory_order_relaxed)) / per_unit;
  return h;
}

}  // namespace kvstash::metrics
