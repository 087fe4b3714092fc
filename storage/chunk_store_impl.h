// ChunkStoreImpl: the ChunkStore over the sharded index, the DRAM tier, the lease table and
// (when configured) the NVMe tier with its demotion threads and cleaner.
//
// Space is reserved at BeginPut, evicting by policy until the payload fits; the chunk
// joins the index only at CommitPut. Expired leases are released lazily, in Lookup and
// before evicting. The DRAM-only store runs one thread of its own, the checksummer (deferred
// checksums of chunks received in place); the NVMe tier adds the demotion threads and
// RocksDB's garbage-collection thread. The NVMe glue lives in chunk_store_nvme.cc; hints,
// tenant quotas and the admin calls in chunk_store_hints.cc.
//
// Hints: the index sorts chunks into eviction classes (storage/index.h); the store keeps
// the active sessions (SessionTable, ending idle ones lazily on puts and lookups) and each
// tenant's DRAM and pinned bytes (TenantQuotas), checked by Reserve before any chunk (a put
// or a promotion) takes DRAM space.
//
// Thread-safety: thread-safe (see ChunkStore).
#pragma once

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "storage/checksummer.h"
#include "storage/chunk_store.h"
#include "storage/cleaner.h"
#include "storage/demoter.h"
#include "storage/dram_allocator.h"
#include "storage/index.h"
#include "storage/lease_table.h"
#include "storage/rate_limiter.h"
#include "storage/read_pool.h"
#include "storage/rocksdb_tier.h"
#include "storage/session_table.h"
#include "storage/tenant_quotas.h"

namespace kvstash::storage {

class ChunkStoreImpl final : public ChunkStore {
 public:
  // `nvme` null: DRAM only.
  ChunkStoreImpl(const ChunkStoreOptions& options, std::shared_ptr<DramAllocator> dram,
                 std::unique_ptr<ChunkIndex> index, std::unique_ptr<RocksDbTier> nvme = nullptr);
  // Answers queued GetAsync reads UNAVAILABLE, writes out queued demotions, then closes
  // the NVMe tier.
  ~ChunkStoreImpl() override;

  using ChunkStore::BeginPut;
  using ChunkStore::Lookup;
  absl::StatusOr<std::unique_ptr<PendingChunk>> BeginPut(const ChunkId& id, const ChunkMeta& meta,
                                                         const PutHints& hints) override;
  absl::Status CommitPut(std::unique_ptr<PendingChunk> pending) override;
  absl::StatusOr<ChunkRef> Get(const ChunkId& id) override;
  void GetAsync(const ChunkId& id, uint64_t lease_id, GetCallback done) override;
  void ReleaseLease(uint64_t lease_id, const ChunkId& id) override;
  LookupResult Lookup(const Key128& ns, absl::Span<const Key128> keys, absl::Duration lease,
                      uint64_t session_id) override;
  void SetNamespaceTenant(const Key128& ns, const std::string& tenant) override;
  absl::StatusOr<uint32_t> Pin(const Key128& ns, absl::Span<const Key128> keys, bool pin) override;
  void EndSession(const Key128& ns, uint64_t session_id) override;
  uint64_t ClearNamespace(const Key128& ns) override;
  std::vector<NamespaceUsage> NamespaceUsages() const override;
  Tier Locate(const ChunkId& id) const override;
  absl::Status Delete(const ChunkId& id) override;
  StoreStats Stats() const override;
  CounterSnapshot NamespaceCounters(const Key128& ns) const override;
  std::vector<std::pair<Key128, CounterSnapshot>> AllNamespaceCounters() const override;

 private:
  // RESOURCE_EXHAUSTED unless a payload of `size` bytes could ever fit.
  absl::Status CheckFits(uint64_t size) const;
  // Allocates `size` bytes for a chunk of `ns` into `out`, evicting as needed: first the
  // tenant's own chunks past its DRAM quota (MakeTenantRoom), then by policy. The one way
  // into DRAM (puts and promotions alike), so no path skips the tenant's quota.
  absl::Status Reserve(const Key128& ns, uint64_t size, Allocation* out);
  // Reserve's eviction loop.
  absl::Status EvictUntilAllocated(uint64_t size, Allocation* out);
  void ExpireLeases(absl::Time now);
  // The lease clock's time (options_.clock, or absl::Now when unset).
  absl::Time Now() const;
  // Counts the index's heap bookkeeping against the DRAM budget; call when its size changed.
  void ChargeBookkeeping();

  // Hint glue (chunk_store_hints.cc).
  // Marks the session active; the sessions that idled out or were pushed out end.
  void TouchSession(const Key128& ns, uint64_t session_id);
  // Sessions idle past the timeout at `now` end.
  void ExpireSessions(absl::Time now);
  // Evicts the coldest chunks of `ns`'s tenant until `size` more bytes fit its DRAM quota.
  // RESOURCE_EXHAUSTED when they cannot (the rest is pinned, leased or being read), and
  // before evicting anything when the quota could never hold it (TenantQuotas::CheckDramRoom).
  absl::Status MakeTenantRoom(const Key128& ns, uint64_t size);
  // Accounts for a chunk evicted from DRAM and demotes it.
  void Evicted(const EvictedEntry& evicted, ChunkRef victim);
  // Evicts each tenant's coldest NVMe chunks past its NVMe quota.
  void EnforceNvmeQuotas();
  // Takes pin quota for a put asking for a pin; clears hints->pin (counted) when refused.
  void AdmitPin(const ChunkId& id, uint64_t size, PutHints* hints);
  // The store's counters with the live session counts added.
  void AddSessionCounts(std::vector<std::pair<Key128, CounterSnapshot>>* all) const;

  // NVMe glue (chunk_store_nvme.cc); each is a no-op or a miss without the NVMe tier.
  // Hands a chunk evicted from DRAM to the demotion queue unless NVMe already has it
  // (waiting up to demotion_wait_ms for room).
  void Demote(const EvictedEntry& evicted, ChunkRef victim);
  // The cleaner over this store's index and DRAM, or null (no NVMe, or cleaner off).
  std::unique_ptr<Cleaner> MakeCleaner();
  // Get after a DRAM miss (already counted by the index when there is no NVMe tier): the
  // chunk below DRAM, or NOT_FOUND; records the get's outcome.
  absl::StatusOr<ChunkRef> GetMissedDram(const ChunkId& id);
  // A chunk below DRAM (demotion queue or NVMe), promoted when options say so; or null.
  ChunkRef GetBelowDram(const ChunkId& id);
  // Copies an NVMe chunk into DRAM and indexes it; null when DRAM has no room.
  ChunkRef Promote(const ChunkId& id, const StoredChunk& chunk);
  // Promotes a chunk below DRAM so it can be pinned; whether DRAM has it now.
  bool PromoteForPin(const ChunkId& id);
  // Deletes every chunk of `ns` below DRAM (demotion queue and NVMe); returns how many of
  // them were not in `counted` (copies of chunks already deleted from DRAM).
  uint64_t ClearBelowDram(const Key128& ns, const absl::flat_hash_set<ChunkId>& counted);
  // Whether the chunk is below DRAM (queued for NVMe or on NVMe).
  bool BelowDram(const ChunkId& id) const;
  void WriteThrough(const ChunkId& id, const StoredChunk& chunk);
  NvmeAdmission Admission() const {
    return {static_cast<uint32_t>(options_.nvme.admission_min_hits)};
  }
  void AddNvmeStats(StoreStats* stats) const;

  const ChunkStoreOptions options_;
  const std::shared_ptr<DramAllocator> dram_;
  const std::unique_ptr<ChunkIndex> index_;
  LeaseTable leases_;
  TenantQuotas quotas_;
  SessionTable sessions_;
  // Destroyed in reverse: the cleaner stops, the demoter drains, then the tier closes.
  const std::unique_ptr<RocksDbTier> nvme_;
  const std::unique_ptr<Demoter> demoter_;
  const std::unique_ptr<Cleaner> cleaner_;          // null without NVMe or with the cleaner off
  const std::unique_ptr<Checksummer> checksummer_;  // null unless background_checksums
  // Paces NVMe reads; null unless nvme.read_bytes_per_s.
  const std::unique_ptr<RateLimiter> read_limiter_;
  std::atomic<uint64_t> nvme_hits_{0};
  std::atomic<uint64_t> nvme_misses_{0};
  std::atomic<uint64_t> promotions_{0};
  std::atomic<uint64_t> write_throughs_{0};
  std::atomic<uint64_t> admission_declined_{0};  // DRAM evictions NVMe admission refused
  // Set by the destructor: reads still queued then answer UNAVAILABLE without the disk.
  std::atomic<bool> closing_{false};
  // NVMe reads of GetAsync; null without NVMe. Last, so destroyed first: its queued reads
  // still use the members above.
  const std::unique_ptr<ReadPool> readers_;
};

// The NVMe tier's RocksDbTierOptions from the store's options: what Validate checks and
// Create opens.
RocksDbTierOptions NvmeTierOptions(const ChunkStoreOptions::Nvme& nvme);

}  // namespace kvstash::storage
