// StorageTier: what every tier of the chunk store holds, serves, deletes, clears per
// namespace and reports. The store (storage/chunk_store_impl.h) is a stack of tiers,
// fastest first: the DRAM tier (storage/dram/dram_tier.h), where puts land and where
// leases, pins and sessions apply, above the lower tiers (storage/lower_tier.h), which
// admit what the tier above evicts. The calls every tier answers alike go through this
// interface, so the store loops over the stack instead of naming a tier.
//
// Thread-safety: implementations are thread-safe; every method may be called from any
// thread.
#pragma once

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "kvstash/keys.h"
#include "storage/chunk.h"

namespace kvstash::storage {

// A chunk read from a tier.
struct TierRead {
  ChunkRef chunk;  // null: absent
  // False when the bytes came from memory the tier holds in flight (a demotion still
  // queued) or from DRAM itself: copying them into DRAM would gain nothing.
  bool promotable = true;
};

class StorageTier {
 public:
  virtual ~StorageTier() = default;

  // What Lookup and Locate report for a chunk held here.
  virtual Tier kind() const = 0;
  // Whether the tier holds `id`, or is about to (queued for writing).
  virtual bool Contains(const ChunkId& id) const = 0;
  // The chunk, its payload verified, or a null chunk when absent. `for_get`: a client's
  // get, counted as the tier's hit or miss (DRAM's in the store's counters) and paced as
  // the tier paces reads; false: the store's own read (a pin promoting the chunk), neither
  // counted nor paced.
  virtual TierRead Get(const ChunkId& id, bool for_get) = 0;
  // Removes `id`; whether it was held.
  virtual bool Delete(const ChunkId& id) = 0;
  // Removes every chunk of `ns`, adding the ids removed to `cleared`.
  virtual void Clear(const Key128& ns, absl::flat_hash_set<ChunkId>* cleared) = 0;
  // Adds the tier's chunks and bytes per namespace to `usage`.
  virtual void AddUsage(absl::flat_hash_map<Key128, NamespaceUsage>* usage) const = 0;
  // Appends the tier's TierStats, its gets served (`hits`) included, and fills its own
  // counters in `stats`.
  virtual void Report(StoreStats* stats) const = 0;
};

}  // namespace kvstash::storage
