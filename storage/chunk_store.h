// ChunkStore: the daemon's cache of KV chunks. It owns the tiers (storage/tier.h: DRAM
// with the chunk index, and below it a stack of lower tiers, storage/lower_tier.h: the NVMe
// tier when configured) and applies the eviction policy and leases. Transports (gRPC, UCX)
// talk to this class only.
//
// With the NVMe tier, chunks evicted from DRAM are demoted to NVMe in the background; Get,
// Lookup and Locate see both tiers (DRAM first). Leases protect DRAM hits only: an NVMe hit
// is reported but not leased (the NVMe budget evicts rarely, and a lost chunk is a miss).
//
// Thread-safety: every method is thread-safe. ChunkRef and PendingChunk are owned by one
// thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "kvstash/hints.h"
#include "kvstash/keys.h"
#include "storage/chunk.h"
#include "storage/dram/arena_memory.h"
#include "storage/nvme/nvme_options.h"
#include "storage/tenant_quota_config.h"

namespace kvstash::storage {

struct ChunkStoreOptions {
  // Hard byte budget of the DRAM tier. The arena is reserved up front; the daemon's RSS
  // stays within it plus a small, fixed overhead.
  uint64_t dram_capacity_bytes = 1ull << 30;
  // Granule of the DRAM arena. Chunks at least this large are stored as a list of pages;
  // smaller ones (and a large chunk's tail) come from size-class slabs carved from pages.
  // 1 MiB matches the wire frame size so a page goes out as one frame without a copy.
  uint64_t page_bytes = 1ull << 20;
  // Back the arena with huge pages: kAuto tries MAP_HUGETLB, then transparent huge pages.
  using HugePages = storage::HugePages;
  HugePages huge_pages = HugePages::kAuto;
  // Fault the whole arena in, on a background thread from start-up (Arena::Create), so
  // page zeroing soon leaves the put path, where it otherwise costs most of the daemon's
  // CPU on a cold tier. RSS grows to the full budget meanwhile.
  bool prefault_dram = true;
  // Supplies the arena's memory (called once, with the arena's size in bytes); returning
  // null, or leaving this unset (default), makes the arena map its own (huge_pages
  // applies then). Supplied memory uses its own page size; prefault_dram still applies.
  std::function<std::unique_ptr<ArenaMemory>(uint64_t bytes)> dram_memory;
  // Largest accepted chunk; larger puts fail with RESOURCE_EXHAUSTED. Also capped by the
  // DRAM capacity.
  uint64_t max_chunk_bytes = 256ull << 20;
  // Eviction policy of the DRAM tier, one of KnownEvictionPolicies()
  // (storage/policy/policies.h): "lru", "s3fifo" (scan-resistant FIFO queues), "tinylfu"
  // (frequency admission) or "chain" (leaves of prompt chains first, from
  // PutHints::parent).
  std::string dram_eviction = "lru";
  // Number of independently locked index shards (power of two).
  int index_shards = 64;
  // Longest lease a Lookup may ask for; longer requests are clamped.
  absl::Duration max_lease = absl::Seconds(60);
  // Chunks received in place (UCX rendezvous) without a checksum from the client are
  // committed at once and hashed on a background thread (storage/checksummer.h), instead
  // of in a second pass before the put is acknowledged. false: hash before committing.
  bool background_checksums = true;

  // The NVMe tier (storage/nvme/nvme_options.h). Off by default.
  using Nvme = NvmeOptions;
  Nvme nvme;

  // Sessions (PutHints::session_id): a session's DRAM chunks are evicted only after every
  // unprotected chunk, and then demoted to NVMe whatever its admission rule.
  struct Sessions {
    // A session named by no put or lookup for this long ends, as EndSession would: its
    // chunks become ordinary chunks of their priority. 5 minutes spans a chat user's pause
    // between turns; shorter frees DRAM sooner after users leave.
    int64_t idle_timeout_ms = 300000;
    // Most sessions tracked at once (~100 bytes each). Past it, the session idle longest
    // ends early, as if it had idled out.
    int max_sessions = 65536;
  } sessions;

  // Per-tenant byte quotas (storage/tenant_quota_config.h).
  using Tenants = TenantOptions;
  Tenants tenants;

  // The clock leases are granted and expired by, and TTL hints and session idleness are
  // measured with. Unset (default): the real clock (absl::Now). Tests supply a fake one to
  // expire leases without sleeping.
  std::function<absl::Time()> clock;

  absl::Status Validate() const;
};

// Result of a prefix lookup.
struct LookupResult {
  uint32_t hit_count = 0;    // leading keys present
  std::vector<Tier> tiers;   // tier of each hit
  uint64_t lease_id = 0;     // non-zero when a lease was taken
  absl::Time lease_expires;  // when the lease lapses
};

class ChunkStore {
 public:
  static absl::StatusOr<std::unique_ptr<ChunkStore>> Create(const ChunkStoreOptions& options);
  virtual ~ChunkStore() = default;

  // Starts a put. Space is reserved (evicting by policy if needed) but the chunk becomes
  // visible only once CommitPut succeeds; dropping the PendingChunk instead leaves no trace.
  // Errors: INVALID_ARGUMENT (size 0), RESOURCE_EXHAUSTED (too large or no evictable
  // space), ALREADY_EXISTS (key present: puts are idempotent, the caller drains and acks).
  // `hints` (kvstash/hints.h) apply once the chunk is committed.
  virtual absl::StatusOr<std::unique_ptr<PendingChunk>> BeginPut(const ChunkId& id,
                                                                 const ChunkMeta& meta,
                                                                 const PutHints& hints) = 0;
  absl::StatusOr<std::unique_ptr<PendingChunk>> BeginPut(const ChunkId& id, const ChunkMeta& meta) {
    return BeginPut(id, meta, PutHints{});
  }
  // Publishes a fully written chunk. Errors: INVALID_ARGUMENT (not all bytes written),
  // DATA_LOSS (meta.checksum != 0 and does not match the payload). A concurrent put of the
  // same key that committed first wins; this one then returns OK and is discarded.
  virtual absl::Status CommitPut(std::unique_ptr<PendingChunk> pending) = 0;

  // A reference that keeps the chunk's bytes alive until dropped, even if it is evicted or
  // deleted meanwhile. NOT_FOUND when absent. Counts a hit or miss.
  virtual absl::StatusOr<ChunkRef> Get(const ChunkId& id) = 0;
  // Get for callers that must not wait on the disk (event-loop threads). A DRAM hit or a
  // miss runs `done` on this thread before GetAsync returns; a chunk below DRAM is read on
  // one of the store's nvme.read_threads, which then runs `done`. Same results and
  // counting as Get. With lease_id != 0, the lease's hold on `id` is released before
  // `done` runs, whatever the result: the ChunkRef protects the bytes from then on.
  using GetCallback = absl::AnyInvocable<void(absl::StatusOr<ChunkRef>) &&>;
  virtual void GetAsync(const ChunkId& id, uint64_t lease_id, GetCallback done) = 0;
  // Releases `lease_id`'s hold on `id` without reading the chunk.
  virtual void ReleaseLease(uint64_t lease_id, const ChunkId& id) = 0;

  // Counts the leading keys present. With lease > 0 (clamped to max_lease) the hits are
  // protected from eviction until each is fetched with the lease id or the lease expires.
  // session_id != 0 marks the session active and adds the hits to its chain (PutHints).
  virtual LookupResult Lookup(const Key128& ns, absl::Span<const Key128> keys, absl::Duration lease,
                              uint64_t session_id) = 0;
  LookupResult Lookup(const Key128& ns, absl::Span<const Key128> keys, absl::Duration lease) {
    return Lookup(ns, keys, lease, 0);
  }
  // Tier of the chunk, or Tier::kNone.
  virtual Tier Locate(const ChunkId& id) const = 0;
  // OK or NOT_FOUND. A chunk being read is freed when its last reader finishes.
  virtual absl::Status Delete(const ChunkId& id) = 0;

  // Binds namespace `ns` to `tenant`, whose quotas (ChunkStoreOptions) then cover its
  // chunks. The daemon calls it when a namespace is registered; unbound namespaces count
  // as tenant "default" once they put chunks, except for NVMe quotas: a namespace known only
  // from NVMe (e.g. after a restart) counts against no quota until bound.
  virtual void SetNamespaceTenant(const Key128& ns, const std::string& tenant) = 0;
  // Pins (pin) or unpins the leading `keys` of `ns` that are present, stopping at the first
  // absent one; returns how many changed state. RESOURCE_EXHAUSTED (nothing pinned) when
  // the tenant's pin quota cannot hold them.
  virtual absl::StatusOr<uint32_t> Pin(const Key128& ns, absl::Span<const Key128> keys,
                                       bool pin) = 0;
  // Ends session `session_id` of `ns`: its chunks become ordinary chunks of their priority.
  virtual void EndSession(const Key128& ns, uint64_t session_id) = 0;
  // Deletes every chunk of `ns` in every tier; returns how many were deleted.
  virtual uint64_t ClearNamespace(const Key128& ns) = 0;
  // Every namespace holding chunks (or bound to a tenant), with its usage per tier.
  virtual std::vector<NamespaceUsage> NamespaceUsages() const = 0;

  virtual StoreStats Stats() const = 0;
  // Counters of one namespace; zeroes for a namespace never seen.
  virtual CounterSnapshot NamespaceCounters(const Key128& ns) const = 0;
  // Every namespace with counters.
  virtual std::vector<std::pair<Key128, CounterSnapshot>> AllNamespaceCounters() const = 0;
};

}  // namespace kvstash::storage
