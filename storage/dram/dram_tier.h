// DramTier: the top tier of the chunk store: the arena's allocator (storage/dram/
// dram_allocator.h), the index of the chunks in it (storage/index.h, which also keeps the
// store's per-namespace counters, hints and lease references) and the background
// checksummer. It reserves space for puts and promotions, commits chunks, evicts by policy
// (offering each victim to the tier below) and keeps the tenants' DRAM and pinned bytes and
// the index's heap bookkeeping charged. Space policy (when to evict, whose chunks, what
// to expire first) stays with the store; this class does each step.
//
// Thread-safety: thread-safe; every method but SetBelow (called before any put) may be
// called from any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kvstash/hints.h"
#include "storage/checksummer.h"
#include "storage/chunk_store.h"
#include "storage/dram/dram_allocator.h"
#include "storage/index.h"
#include "storage/lower_tier.h"
#include "storage/tenant_quotas.h"
#include "storage/tier.h"

namespace kvstash::storage {

class DramTier final : public StorageTier {
 public:
  // The allocator over options.dram_memory's memory when it supplies some, else over an
  // arena mapping its own.
  static absl::StatusOr<std::shared_ptr<DramAllocator>> CreateAllocator(
      const ChunkStoreOptions& options);

  // `quotas` outlives the tier. Uses options.max_chunk_bytes and
  // options.background_checksums.
  DramTier(const ChunkStoreOptions& options, std::shared_ptr<DramAllocator> dram,
           std::unique_ptr<ChunkIndex> index, TenantQuotas* quotas);
  DramTier(const DramTier&) = delete;
  DramTier& operator=(const DramTier&) = delete;

  // Where evicted chunks go; null (the default): they are dropped. Set before any put.
  void SetBelow(LowerTier* below) { below_ = below; }

  // StorageTier. Get never blocks; its reads are not promotable (they are DRAM's).
  Tier kind() const override { return Tier::kDram; }
  bool Contains(const ChunkId& id) const override;
  TierRead Get(const ChunkId& id, bool for_get) override;
  bool Delete(const ChunkId& id) override;
  void Clear(const Key128& ns, absl::flat_hash_set<ChunkId>* cleared) override;
  void AddUsage(absl::flat_hash_map<Key128, NamespaceUsage>* usage) const override;
  void Report(StoreStats* stats) const override;

  // A client's get: the chunk (its hit counted) or null, its miss counted when `count_miss`.
  ChunkRef Find(const ChunkId& id, bool count_miss) { return index_->Get(id, count_miss); }

  // RESOURCE_EXHAUSTED unless a payload of `size` bytes could ever fit.
  absl::Status CheckFits(uint64_t size) const;
  // Allocates `size` bytes into `out` without evicting; false when they do not fit now.
  bool TryAllocate(uint64_t size, Allocation* out) { return dram_->TryAllocate(size, out); }
  // Evicts the coldest evictable chunk (of a namespace `match` accepts, when given),
  // uncharges it and offers it to the tier below; its size, or 0 when nothing is evictable.
  uint64_t EvictOne(const TenantMatcher* match = nullptr);

  // A chunk being received into `allocation`.
  std::unique_ptr<PendingChunk> NewPending(const ChunkId& id, const ChunkMeta& meta,
                                           Allocation allocation, const PutHints& hints) const;
  // Seals a chunk of NewPending: INVALID_ARGUMENT for one that is not this tier's, else as
  // DramPendingChunk::Seal. `hints` receives the put's hints.
  absl::StatusOr<ChunkRef> Seal(PendingChunk* pending, PutHints* hints) const;
  // A copy of `chunk` into `allocation`, which holds its size (a promotion).
  ChunkRef Copy(const StoredChunk& chunk, Allocation allocation) const;
  // Indexes a sealed or copied chunk and charges it to its tenant; false when the key was
  // already there (the chunk is dropped). `count_put`: a client's put, not a promotion.
  // REQUIRES: `chunk` came from Seal or Copy of this tier.
  bool Insert(const ChunkId& id, ChunkRef chunk, bool count_put, const PutHints& hints = {});

  // The index, for what the store keeps on it: leases, sessions, pins, counters.
  ChunkIndex& index() const { return *index_; }
  const DramAllocator& allocator() const { return *dram_; }

 private:
  // Counts the index's heap bookkeeping against the DRAM budget; call when its size changed.
  void ChargeBookkeeping();

  const uint64_t max_chunk_bytes_;
  const std::shared_ptr<DramAllocator> dram_;
  const std::unique_ptr<ChunkIndex> index_;
  TenantQuotas* const quotas_;
  LowerTier* below_ = nullptr;
  const std::unique_ptr<Checksummer> checksummer_;  // null unless background_checksums
};

}  // namespace kvstash::storage
