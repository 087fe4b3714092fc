// LowerTier: a tier below DRAM. The chunk store (storage/chunk_store_impl.h) keeps the DRAM
// tier (storage/dram/dram_tier.h), where every put lands and where leases and hints apply,
// above a stack of lower tiers, fastest first; each is a StorageTier (storage/tier.h) that
// also admits. A chunk DRAM evicts is offered to the first lower tier (Admit); a chunk a
// lower tier evicts may be offered to the one below it (TierEnv::below); a get that misses
// DRAM asks each lower tier in turn. The store calls only this interface, so a new tier
// (a GPU staging buffer, a remote tier) is a new implementation stacked by its creator,
// not a change to the store. The NVMe tier (storage/nvme/nvme_tier.h) is the one in the daemon.
//
// Thread-safety: implementations are thread-safe; every method may be called from any
// thread after Attach.
#pragma once

#include <functional>

#include "storage/index.h"
#include "storage/tier.h"

namespace kvstash::storage {

class DramAllocator;
class TenantQuotas;

// What a lower tier may use of the store it is stacked in; fixed at Attach, and outliving
// the tier.
struct TierEnv {
  const ChunkIndex* index = nullptr;  // DRAM's index (a cleaner reads its cold end)
  const DramAllocator* dram = nullptr;
  const TenantQuotas* quotas = nullptr;  // per-tenant bytes of this tier (nvme quotas)
  // Adds to a namespace's counters (e.g. quota evictions).
  std::function<void(const Key128& ns, const CounterSnapshot& delta)> add_counters;
  // The next tier down, which may take what this tier evicts; null: evictions are dropped.
  class LowerTier* below = nullptr;
};

class LowerTier : public StorageTier {
 public:
  // Called once by the store that stacks the tier, before any other call.
  virtual void Attach(const TierEnv& env) = 0;
  // Whether Get may wait on I/O (the store's GetAsync then reads on its read pool).
  virtual bool blocking() const = 0;

  // A chunk evicted from the tier above (`evicted` says how hot and how kept it was):
  // stored, now or in the background, or declined (admission). `chunk` keeps its bytes
  // alive for as long as the tier holds the reference.
  virtual void Admit(const EvictedEntry& evicted, ChunkRef chunk) = 0;
  // A put was just committed to DRAM (a write-through tier copies it now).
  virtual void Committed(const ChunkId& id, const StoredChunk& chunk) = 0;

  // DRAM is about to evict for a put (a cleaner's cue to write ahead).
  virtual void DramEvicting() = 0;
  // DRAM evicted: the tier's own limits (per-tenant quotas) apply now.
  virtual void AfterEvictions() = 0;
};

}  // namespace kvstash::storage
