// The engine's own prefix cache: a least-recently-used set of chunk keys with a capacity in
// chunks, as vLLM's automatic prefix caching keeps freed KV blocks until it needs them.
// vLLM frees a request's blocks tail first, so a prompt's last chunk is evicted before its
// first; MatchPrefix and Insert touch keys from the last to the first for the same order.
//
// Thread-safety: none; the simulation's thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "kvstash/keys.h"

namespace kvstash::bench::workload {

class EngineCache {
 public:
  // capacity_chunks 0: caches nothing.
  explicit EngineCache(uint64_t capacity_chunks) : capacity_(capacity_chunks) {}

  // Number of leading `keys` present; those become the most recently used.
  size_t MatchPrefix(absl::Span<const Key128> keys);
  // Whether `key` is present (no touch).
  bool Contains(const Key128& key) const { return map_.contains(key); }
  // Adds or refreshes every key, then evicts the least recently used past the capacity.
  void Insert(absl::Span<const Key128> keys);

  size_t size() const { return map_.size(); }
  uint64_t capacity() const { return capacity_; }
  uint64_t evictions() const { return evictions_; }

 private:
  void Touch(const Key128& key);

  uint64_t capacity_;
  uint64_t evictions_ = 0;
  std::list<Key128> lru_;  // front: most recently used
  absl::flat_hash_map<Key128, std::list<Key128>::iterator> map_;
};

}  // namespace kvstash::bench::workload
