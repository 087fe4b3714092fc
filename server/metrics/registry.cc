#include "server/metrics/registry.h"

namespace kvstash::metrics {

void Registry::Add(Collector collector) {
  absl::MutexLock lock(&mu_);
  collectors_.push_back(std::move(collector));
}

std::vector<Family> Registry::Collect() const {
  std::vector<Collector> collectors;
  {
    absl::MutexLock lock(&mu_);
    collectors = collectors_;
  }
  std::vector<Family> out;
  for (const Collector& c : collectors) c(&out);
  return out;
}

}  // namespace kvstash::metrics
