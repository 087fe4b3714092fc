// Registry: the set of collectors one /metrics page is made of.
//
// Each component declares its metric families in one list and registers a collector that
// appends their current values; a scrape runs every collector in registration order.
// Collectors run on the scraping thread, so they may take locks or call Stats(); the data
// path only ever touches the lock-free cells of metric.h.
//
// Thread-safety: thread-safe. A collector must stay valid until the registry is destroyed
// and must itself be safe to call from any thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/metrics/exposition.h"

namespace kvstash::metrics {

using Collector = std::function<void(std::vector<Family>* out)>;

class Registry {
 public:
  void Add(Collector collector) ABSL_LOCKS_EXCLUDED(mu_);
  // Every collector's families.
  std::vector<Family> Collect() const ABSL_LOCKS_EXCLUDED(mu_);
  // Collect() rendered as Prometheus text.
  std::string Scrape() const { return RenderText(Collect()); }

 private:
  mutable absl::Mutex mu_;
  std::vector<Collector> collectors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::metrics
