#include "bench/workload/engine_cache.h"

namespace kvstash::bench::workload {

size_t EngineCache::MatchPrefix(absl::Span<const Key128> keys) {
  size_t n = 0;
  while (n < keys.size() && map_.contains(keys[n])) ++n;
  for (size_t i = n; i > 0; --i) Touch(keys[i - 1]);
  return n;
}

void EngineCache::Touch(const Key128& key) {
  auto it = map_.find(key);
  if (it != map_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.push_front(key);
  map_.emplace(key, lru_.begin());
}

void EngineCache::Insert(absl::Span<const Key128> keys) {
  if (capacity_ == 0) return;
  for (size_t i = keys.size(); i > 0; --i) Touch(keys[i - 1]);
  while (map_.size() > capacity_) {
    map_.erase(lru_.back());
    lru_.pop_back();
    ++evictions_;
  }
}

}  // namespace kvstash::bench::workload
