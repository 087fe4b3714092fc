// Helpers shared by the eviction policy tests: hooks the way the index fills them, and
// victims taken the way the index takes them.
//
// Thread-safety: test helpers; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "storage/policy/eviction_policy.h"

namespace kvstash::storage::testing {

// Accepts every entry as evictable.
inline bool AcceptAll(const PolicyHook*) { return true; }

// `n` hooks of 100 bytes each with keys first_key, first_key + 1, ...
inline std::vector<PolicyHook> Hooks(size_t n, uint64_t first_key) {
  std::vector<PolicyHook> hooks(n);
  for (size_t i = 0; i < n; ++i) {
    hooks[i].size_bytes = 100;
    hooks[i].key_hash = first_key + i;
  }
  return hooks;
}

// Picks and erases the next victim; null when none is left.
inline PolicyHook* EvictOne(EvictionPolicy& p) {
  PolicyHook* v = p.PickVictim(AcceptAll);
  if (v != nullptr) p.OnErase(v);
  return v;
}

// Evicts everything; returns the victims in order.
inline std::vector<PolicyHook*> DrainOrder(EvictionPolicy& p) {
  std::vector<PolicyHook*> order;
  while (PolicyHook* v = EvictOne(p)) order.push_back(v);
  return order;
}

}  // namespace kvstash::storage::testing
