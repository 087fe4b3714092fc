#include "storage/chunk_store_impl.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "storage/dram/dram_chunk.h"
#include "storage/nvme/nvme_tier.h"

namespace kvstash::storage {
namespace {

// Evictions one Reserve may do beyond the chunks present when it started. Only concurrent
// puts refilling the freed space can use them up; the put then fails instead of spinning.
constexpr uint64_t kExtraEvictionRounds = 1024;

// Heap bytes of a chunk's DramChunk beside its index entry (ChunkIndex::BytesPerEntry):
// one make_shared allocation of the object and its control block (two counts, a vtable
// pointer). Both are charged to the DRAM budget so RSS stays within it even when the tier
// is full of 1 KiB chunks; derived from sizeof so a grown structure is charged at once.
constexpr uint64_t kDramChunkHeapBytes =
    sizeof(DramChunk) + 3 * sizeof(void*) + kMallocOverheadBytes;

// The DRAM tier's allocator over the owner's memory when it supplies some, else over an
// arena mapping its own.
absl::StatusOr<std::shared_ptr<DramAllocator>> CreateDram(const ChunkStoreOptions& options) {
  if (options.dram_memory) {
    std::unique_ptr<ArenaMemory> memory = options.dram_memory(options.dram_capacity_bytes);
    if (memory != nullptr) {
      auto arena = Arena::CreateOn(std::move(memory), options.page_bytes, options.prefault_dram);
      if (!arena.ok()) return arena.status();
      return DramAllocator::Create(*std::move(arena));
    }
  }
  return DramAllocator::Create(options.dram_capacity_bytes, options.page_bytes, options.huge_pages,
                               options.prefault_dram);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChunkStore>> ChunkStore::Create(const ChunkStoreOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto dram = CreateDram(options);
  if (!dram.ok()) return dram.status();
  auto index = ChunkIndex::Create(options.index_shards, options.dram_eviction);
  if (!index.ok()) return index.status();
  std::vector<std::unique_ptr<LowerTier>> below;
  if (!options.nvme.path.empty()) {
    auto nvme = NvmeTier::Open(options.nvme);
    if (!nvme.ok()) return nvme.status();
    below.push_back(*std::move(nvme));
  }
  return std::make_unique<ChunkStoreImpl>(options, *std::move(dram), *std::move(index),
                                          std::move(below));
}

ChunkStoreImpl::ChunkStoreImpl(const ChunkStoreOptions& options,
                               std::shared_ptr<DramAllocator> dram,
                               std::unique_ptr<ChunkIndex> index,
                               std::vector<std::unique_ptr<LowerTier>> below)
    : options_(options),
      dram_(std::move(dram)),
      index_(std::move(index)),
      quotas_(options.tenants, dram_->capacity_bytes() / 2),
      sessions_(absl::Milliseconds(options.sessions.idle_timeout_ms),
                static_cast<size_t>(options.sessions.max_sessions)),
      below_(std::move(below)),
      checksummer_(options.background_checksums
                       ? std::make_unique<Checksummer>(
                             Checksummer::Options{},
                             [index = index_.get()](const ChunkId& id) { return index->Peek(id); })
                       : nullptr),
      readers_(AnyBlockingTier() ? std::make_unique<ReadPool>(options.nvme.read_threads)
                                 : nullptr) {
  index_->SetClock(options.clock);
  index_->SetSessionCheck([this](const SessionKey& s) { return sessions_.IsActive(s); });
  for (size_t i = 0; i < below_.size(); ++i) {
    TierEnv env;
    env.index = index_.get();
    env.dram = dram_.get();
    env.quotas = &quotas_;
    env.add_counters = [this](const Key128& ns, const CounterSnapshot& c) {
      index_->AddCounters(ns, c);
    };
    env.below = i + 1 < below_.size() ? below_[i + 1].get() : nullptr;
    below_[i]->Attach(env);
  }
}

ChunkStoreImpl::~ChunkStoreImpl() {
  closing_.store(true, std::memory_order_release);  // reads still queued are answered at once
  readers_.reset();
  for (std::unique_ptr<LowerTier>& tier : below_) tier.reset();  // top first: it may spill down
}

absl::Status ChunkStoreImpl::CheckFits(uint64_t size) const {
  if (size > options_.max_chunk_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "chunk of ", size, " bytes exceeds max_chunk_bytes (", options_.max_chunk_bytes, ")"));
  }
  // Each tail piece may need a slab page of its own.
  const uint64_t worst_pages =
      size / dram_->page_bytes() + (size % dram_->page_bytes() != 0 ? 2 : 0);
  if (std::max(worst_pages, uint64_t{1}) > dram_->arena().num_pages()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("chunk of ", size, " bytes does not fit the DRAM tier (",
                     dram_->capacity_bytes(), " bytes in pages of ", dram_->page_bytes(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<PendingChunk>> ChunkStoreImpl::BeginPut(const ChunkId& id,
                                                                       const ChunkMeta& meta,
                                                                       const PutHints& hints) {
  if (meta.size_bytes == 0) return absl::InvalidArgumentError("chunk size_bytes must be > 0");
  if (absl::Status s = CheckFits(meta.size_bytes); !s.ok()) return s;
  if (Locate(id) != Tier::kNone) {
    return absl::AlreadyExistsError("chunk already stored");
  }
  if (hints.session_id != 0) TouchSession(id.ns, hints.session_id);
  Allocation allocation;
  if (absl::Status s = Reserve(id.ns, meta.size_bytes, &allocation); !s.ok()) return s;
  auto pending = std::make_unique<DramPendingChunk>(id, meta, std::move(allocation), dram_);
  pending->set_hints(hints);
  return pending;
}

absl::Status ChunkStoreImpl::Reserve(const Key128& ns, uint64_t size, Allocation* out) {
  if (absl::Status s = MakeTenantRoom(ns, size); !s.ok()) return s;
  if (dram_->TryAllocate(size, out)) return absl::OkStatus();
  for (const std::unique_ptr<LowerTier>& tier : below_) tier->DramEvicting();
  const absl::Time now = Now();
  ExpireLeases(now);
  ExpireSessions(now);
  absl::Status s = EvictUntilAllocated(size, out);
  // The demotions since the last put that evicted count against the tiers' limits now.
  for (const std::unique_ptr<LowerTier>& tier : below_) tier->AfterEvictions();
  return s;
}

absl::Status ChunkStoreImpl::EvictUntilAllocated(uint64_t size, Allocation* out) {
  const uint64_t max_rounds = index_->size() + kExtraEvictionRounds;
  for (uint64_t round = 1;; ++round) {
    // Dropping the victim here frees its bytes (EvictOne only picks unreferenced chunks),
    // unless the demotion queue keeps it until written to NVMe.
    EvictedEntry evicted_entry;
    ChunkRef victim = index_->EvictOne(&evicted_entry);
    const bool evicted = victim != nullptr;
    if (evicted) Evicted(evicted_entry, std::move(victim));
    ChargeBookkeeping();
    if (!evicted) {
      return absl::ResourceExhaustedError(
          absl::StrCat("DRAM tier full: no room for ", size, " bytes and nothing evictable (every ",
                       "remaining chunk is leased, being read, or still being written)"));
    }
    if (dram_->TryAllocate(size, out)) return absl::OkStatus();
    if (round >= max_rounds) {
      return absl::ResourceExhaustedError(
          absl::StrCat("DRAM tier full: no room for ", size, " bytes after evicting ", round,
                       " chunks; concurrent puts keep taking the space"));
    }
  }
}

absl::Status ChunkStoreImpl::CommitPut(std::unique_ptr<PendingChunk> pending) {
  auto* dram_pending = dynamic_cast<DramPendingChunk*>(pending.get());
  if (dram_pending == nullptr || !dram_pending->IsFrom(*dram_)) {
    return absl::InvalidArgumentError("CommitPut: not a pending chunk of this store");
  }
  absl::StatusOr<ChunkRef> chunk = dram_pending->Seal(checksummer_ != nullptr);
  if (!chunk.ok()) return chunk.status();
  const ChunkId& id = pending->id();
  const uint64_t size = (*chunk)->meta().size_bytes;
  PutHints hints = dram_pending->hints();
  if (hints.pin) AdmitPin(id, size, &hints);
  // The commit is the session's activity too: one that idled out since BeginPut resumes
  // (the index refuses to join a session that is not active; see SetSessionCheck).
  if (hints.session_id != 0 && !hints.pin) TouchSession(id.ns, hints.session_id);
  // False when a concurrent put of the same key committed first: ours is dropped here.
  if (!index_->Insert(id, *chunk, Tier::kDram, /*count_put=*/true, hints)) {
    if (hints.pin) quotas_.Unpin(id.ns, size);
    return absl::OkStatus();
  }
  quotas_.AddDram(id.ns, static_cast<int64_t>(size));
  if (!static_cast<const DramChunk&>(**chunk).checksum_known()) {
    checksummer_->Enqueue(pending->id());
  }
  ChargeBookkeeping();
  for (const std::unique_ptr<LowerTier>& tier : below_) tier->Committed(id, **chunk);
  return absl::OkStatus();
}

absl::StatusOr<ChunkRef> ChunkStoreImpl::Get(const ChunkId& id) {
  ChunkRef chunk = index_->Get(id, /*count_miss=*/below_.empty());
  if (chunk != nullptr) return chunk;
  return GetMissedDram(id);
}

absl::StatusOr<ChunkRef> ChunkStoreImpl::GetMissedDram(const ChunkId& id) {
  if (below_.empty()) return absl::NotFoundError("chunk not found");  // miss counted
  ChunkRef chunk = GetBelowDram(id);
  index_->RecordGet(id, chunk != nullptr);
  if (chunk == nullptr) return absl::NotFoundError("chunk not found");
  return chunk;
}

void ChunkStoreImpl::GetAsync(const ChunkId& id, uint64_t lease_id, GetCallback done) {
  // The lease has done its job once the reference (or the miss) is in hand.
  auto answer = [this, &id, lease_id](GetCallback& done, absl::StatusOr<ChunkRef> ref) {
    if (lease_id != 0) ReleaseLease(lease_id, id);
    std::move(done)(std::move(ref));
  };
  ChunkRef chunk = index_->Get(id, /*count_miss=*/below_.empty());
  if (chunk != nullptr) return answer(done, std::move(chunk));
  // Nothing below DRAM to wait for: answered here, counted as Get counts it.
  if (readers_ == nullptr || LocateBelow(id) == Tier::kNone) {
    return answer(done, GetMissedDram(id));
  }
  readers_->Schedule([this, id, lease_id, done = std::move(done)]() mutable {
    absl::StatusOr<ChunkRef> ref = absl::UnavailableError("the chunk store is shutting down");
    // Get looks in DRAM again: a concurrent put may have landed.
    if (!closing_.load(std::memory_order_acquire)) ref = Get(id);
    if (lease_id != 0) ReleaseLease(lease_id, id);
    std::move(done)(std::move(ref));
  });
}

void ChunkStoreImpl::ReleaseLease(uint64_t lease_id, const ChunkId& id) {
  if (auto hold = leases_.Release(lease_id, id)) index_->DropLeaseRef(hold->id, hold->generation);
}

LookupResult ChunkStoreImpl::Lookup(const Key128& ns, absl::Span<const Key128> keys,
                                    absl::Duration lease, uint64_t session_id) {
  if (session_id != 0) TouchSession(ns, session_id);
  const absl::Time now = Now();
  ExpireLeases(now);
  const absl::Duration granted = std::min(lease, options_.max_lease);
  const bool take_lease = granted > absl::ZeroDuration();
  LookupResult result;
  std::vector<LeaseTable::Hold> holds;
  for (const Key128& key : keys) {
    const ChunkId id{ns, key};
    const ProbeResult probe = index_->Probe(id, take_lease, session_id);
    if (probe.tier == Tier::kNone) {
      const Tier below = LocateBelow(id);
      if (below == Tier::kNone) break;
      result.tiers.push_back(below);  // reported, not leased (see ChunkStore)
      continue;
    }
    result.tiers.push_back(probe.tier);
    if (take_lease) holds.push_back({id, probe.generation});
  }
  result.hit_count = static_cast<uint32_t>(result.tiers.size());
  index_->RecordLookup(ns, keys.empty() ? Key128{} : keys.front(), result.hit_count);
  if (!holds.empty()) {
    result.lease_expires = now + granted;
    result.lease_id = leases_.Add(result.lease_expires, std::move(holds));
  }
  return result;
}

absl::Time ChunkStoreImpl::Now() const { return options_.clock ? options_.clock() : absl::Now(); }

void ChunkStoreImpl::ExpireLeases(absl::Time now) {
  for (const LeaseTable::Hold& hold : leases_.TakeExpired(now)) {
    index_->DropLeaseRef(hold.id, hold.generation);
  }
}

Tier ChunkStoreImpl::Locate(const ChunkId& id) const {
  const Tier tier = index_->Locate(id);
  if (tier != Tier::kNone) return tier;
  return LocateBelow(id);
}

absl::Status ChunkStoreImpl::Delete(const ChunkId& id) {
  // The bytes go when the last reader drops its ref; here if there is none.
  bool pinned = false;
  const ChunkRef erased = index_->Erase(id, &pinned);
  const bool found_in_dram = erased != nullptr;
  bool found = found_in_dram;
  if (found_in_dram) {
    const uint64_t size = erased->meta().size_bytes;
    quotas_.AddDram(id.ns, -static_cast<int64_t>(size));
    if (pinned) quotas_.Unpin(id.ns, size);
    ChargeBookkeeping();
  }
  for (const std::unique_ptr<LowerTier>& tier : below_) found = tier->Delete(id) || found;
  return found ? absl::OkStatus() : absl::NotFoundError("chunk not found");
}

void ChunkStoreImpl::ChargeBookkeeping() {
  dram_->SetMetadataBytes(index_->size() * (index_->BytesPerEntry() + kDramChunkHeapBytes));
}

StoreStats ChunkStoreImpl::Stats() const {
  StoreStats stats;
  stats.total = index_->Totals();
  for (const auto& [ns, count] : sessions_.CountsByNamespace(Now())) stats.total.sessions += count;
  TierStats dram;
  dram.tier = Tier::kDram;
  dram.capacity_bytes = dram_->capacity_bytes();
  dram.used_bytes = dram_->used_bytes();
  std::tie(dram.chunks, dram.chunk_bytes) = index_->TierUsage(Tier::kDram);
  stats.tiers.push_back(dram);
  for (const std::unique_ptr<LowerTier>& tier : below_) tier->Report(&stats);
  // A get counts once, at the tier that served it; DRAM's are those no tier below served
  // (read apart from the totals, so clamped).
  uint64_t below_hits = 0;
  for (size_t i = 1; i < stats.tiers.size(); ++i) below_hits += stats.tiers[i].hits;
  stats.tiers[0].hits = stats.total.hits - std::min(stats.total.hits, below_hits);
  if (!below_.empty()) stats.nvme.promotions = promotions_.load(std::memory_order_relaxed);
  return stats;
}

CounterSnapshot ChunkStoreImpl::NamespaceCounters(const Key128& ns) const {
  CounterSnapshot c = index_->NamespaceCounters(ns);
  const auto sessions = sessions_.CountsByNamespace(Now());
  if (auto it = sessions.find(ns); it != sessions.end()) c.sessions = it->second;
  return c;
}

std::vector<std::pair<Key128, CounterSnapshot>> ChunkStoreImpl::AllNamespaceCounters() const {
  std::vector<std::pair<Key128, CounterSnapshot>> all = index_->AllNamespaceCounters();
  AddSessionCounts(&all);
  return all;
}

}  // namespace kvstash::storage
