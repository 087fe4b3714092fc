// ChunkStoreImpl: the ChunkStore over a stack of tiers (storage/tier.h): the DRAM tier
// (storage/dram/dram_tier.h: arena, index, checksummer) above the lower tiers
// (storage/lower_tier.h; the daemon's is the NVMe tier alone), plus the lease table, the
// sessions and the tenants' quotas.
//
// Space is reserved at BeginPut, evicting by policy until the payload fits; the chunk
// joins the index only at CommitPut. Expired leases are released lazily, in Lookup and
// before evicting. The store runs a read pool when a lower tier blocks; the tiers run their
// own threads. The glue for reads below DRAM lives in chunk_store_tiers.cc; hints, tenant
// quotas and the admin calls in chunk_store_hints.cc.
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

#include "storage/chunk_store.h"
#include "storage/dram/dram_tier.h"
#include "storage/index.h"
#include "storage/lease_table.h"
#include "storage/lower_tier.h"
#include "storage/read_pool.h"
#include "storage/session_table.h"
#include "storage/tenant_quotas.h"

namespace kvstash::storage {

class ChunkStoreImpl final : public ChunkStore {
 public:
  // `below`: the lower tiers, fastest first (each is attached here); empty: DRAM only.
  ChunkStoreImpl(const ChunkStoreOptions& options, std::shared_ptr<DramAllocator> dram,
                 std::unique_ptr<ChunkIndex> index,
                 std::vector<std::unique_ptr<LowerTier>> below = {});
  // Answers queued GetAsync reads UNAVAILABLE, then closes the lower tiers, top first.
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
  // Allocates `size` bytes for a chunk of `ns` into `out`, evicting as needed: first the
  // tenant's own chunks past its DRAM quota (MakeTenantRoom), then by policy. The one way
  // into DRAM (puts and promotions alike), so no path skips the tenant's quota.
  absl::Status Reserve(const Key128& ns, uint64_t size, Allocation* out);
  // Reserve's eviction loop.
  absl::Status EvictUntilAllocated(uint64_t size, Allocation* out);
  void ExpireLeases(absl::Time now);
  // The lease clock's time (options_.clock, or absl::Now when unset).
  absl::Time Now() const;
  // The index of the DRAM tier, which also keeps leases, sessions, pins and counters.
  ChunkIndex& index() const { return dram_.index(); }

  // Hint glue (chunk_store_hints.cc).
  // Marks the session active; the sessions that idled out or were pushed out end.
  void TouchSession(const Key128& ns, uint64_t session_id);
  // Sessions idle past the timeout at `now` end.
  void ExpireSessions(absl::Time now);
  // Evicts the coldest chunks of `ns`'s tenant until `size` more bytes fit its DRAM quota.
  // RESOURCE_EXHAUSTED when they cannot (the rest is pinned, leased or being read), and
  // before evicting anything when the quota could never hold it (TenantQuotas::CheckDramRoom).
  absl::Status MakeTenantRoom(const Key128& ns, uint64_t size);
  // Takes pin quota for a put asking for a pin; clears hints->pin (counted) when refused.
  void AdmitPin(const ChunkId& id, uint64_t size, PutHints* hints);
  // The store's counters with the live session counts added.
  void AddSessionCounts(std::vector<std::pair<Key128, CounterSnapshot>>* all) const;

  // Lower-tier glue (chunk_store_tiers.cc); each is a no-op or a miss without lower tiers.
  // Get after a DRAM miss (already counted by the index when there is no lower tier): the
  // chunk below DRAM, or NOT_FOUND; records the get's outcome.
  absl::StatusOr<ChunkRef> GetMissedDram(const ChunkId& id);
  // A chunk below DRAM, promoted when options say so; or null.
  ChunkRef GetBelowDram(const ChunkId& id);
  // Copies a chunk from below into DRAM and indexes it; null when DRAM has no room.
  ChunkRef Promote(const ChunkId& id, const StoredChunk& chunk);
  // Promotes a chunk below DRAM so it can be pinned; whether DRAM has it now.
  bool PromoteForPin(const ChunkId& id);
  // The kind of the first lower tier holding `id`, or Tier::kNone.
  Tier LocateBelow(const ChunkId& id) const;
  // Whether some lower tier may wait on I/O.
  bool AnyBlockingTier() const;

  const ChunkStoreOptions options_;
  LeaseTable leases_;
  TenantQuotas quotas_;
  SessionTable sessions_;
  DramTier dram_;
  // Closed top first by the destructor, before the DRAM tier whose index they read.
  std::vector<std::unique_ptr<LowerTier>> below_;
  // Every tier, fastest first: &dram_, then below_.
  std::vector<StorageTier*> tiers_;
  std::atomic<uint64_t> promotions_{0};
  // Set by the destructor: reads still queued then answer UNAVAILABLE without the disk.
  std::atomic<bool> closing_{false};
  // Reads of GetAsync below DRAM; null unless a lower tier blocks. Reset first by the
  // destructor: its queued reads still use the members above.
  std::unique_ptr<ReadPool> readers_;
};

}  // namespace kvstash::storage
