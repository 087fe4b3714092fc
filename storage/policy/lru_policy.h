// LruPolicy: evicts the least recently inserted or read entry that may be evicted.
//
// Thread-safety: not thread-safe (see EvictionPolicy).
#pragma once

#include "storage/policy/eviction_policy.h"

namespace kvstash::storage {

class LruPolicy final : public EvictionPolicy {
 public:
  static constexpr absl::string_view kName = "lru";

  absl::string_view name() const override { return kName; }
  void OnInsert(PolicyHook* hook) override;
  void OnAccess(PolicyHook* hook) override;
  void OnErase(PolicyHook* hook) override { list_.Remove(hook); }
  // Walks from the cold end past entries that are not evictable (leased or being read);
  // they keep their place, so they are next in line once released.
  PolicyHook* PickVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) override;
  void VisitColdest(absl::FunctionRef<bool(const PolicyHook*)> visit) const override;
  // The last insert or access, in steady-clock nanoseconds: comparable across shards.
  uint64_t VictimRank(const PolicyHook* victim) const override { return victim->stamp; }

 private:
  HookList list_;  // front = most recently used
};

}  // namespace kvstash::storage
