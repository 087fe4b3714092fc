// ChainPolicy: chain-aware LRU for prefix caches. A chunk is only useful while every chunk
// before it in its prompt is cached, so entries with cached children (PolicyHook::children
// > 0, maintained by the index from PutHints::parent) are evicted only once no leaf is
// left: a chain is eaten from its tail and never keeps an orphaned tail while dropping its
// head. Within each group, least recently used first.
//
// Hook use: word0 = group (leaf or parent), stamp = last insert or read; each list is
// kept in stamp order, so an entry changing groups keeps its recency.
//
// Thread-safety: not thread-safe (see EvictionPolicy).
#pragma once

#include "storage/policy/eviction_policy.h"

namespace kvstash::storage {

class ChainPolicy final : public EvictionPolicy {
 public:
  static constexpr absl::string_view kName = "chain";

  absl::string_view name() const override { return kName; }
  void OnInsert(PolicyHook* hook) override;
  void OnAccess(PolicyHook* hook) override;
  void OnErase(PolicyHook* hook) override { List(hook).Remove(hook); }
  // Moves the entry to the other group at its place by recency. Walks the target list from
  // the end nearest its likely place (a parent losing its last child is usually older than
  // most leaves; one gaining a child was usually just written).
  void OnChildrenChanged(PolicyHook* hook) override;
  // Leaves from their cold end, then parents; unevictable entries keep their places.
  PolicyHook* PickVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) override;
  void VisitColdest(absl::FunctionRef<bool(const PolicyHook*)> visit) const override;
  // Every leaf ranks below every parent, so the shards together take leaves first; then
  // last access time.
  uint64_t VictimRank(const PolicyHook* victim) const override;

 private:
  enum Group : uint32_t { kLeaf = 0, kParent = 1 };
  HookList& List(const PolicyHook* hook) { return hook->word0 == kLeaf ? leaves_ : parents_; }

  HookList leaves_;  // front = most recently used
  HookList parents_;
};

}  // namespace kvstash::storage
