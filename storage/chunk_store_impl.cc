#include "storage/chunk_store_impl.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "storage/nvme/nvme_tier.h"
#include "storage/policy/eviction_policy.h"

namespace kvstash::storage {
namespace {

// Evictions one Reserve may do beyond the chunks present when it started. Only concurrent
// puts refilling the freed space can use them up; the put then fails instead of spinning.
constexpr uint64_t kExtraEvictionRounds = 1024;

}  // namespace

absl::StatusOr<std::unique_ptr<ChunkStore>> ChunkStore::Create(const ChunkStoreOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  auto dram = DramTier::CreateAllocator(options);
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
      quotas_(options.tenants, dram->capacity_bytes() / 2),
      sessions_(absl::Milliseconds(options.sessions.idle_timeout_ms),
                static_cast<size_t>(options.sessions.max_sessions)),
      dram_(options, std::move(dram), std::move(index), &quotas_),
      below_(std::move(below)),
      readers_(AnyBlockingTier() ? std::make_unique<ReadPool>(options.nvme.read_threads)
                                 : nullptr) {
  this->index().SetClock(options.clock);
  this->index().SetSessionCheck([this](const SessionKey& s) { return sessions_.IsActive(s); });
  tiers_.push_back(&dram_);
  for (size_t i = 0; i < below_.size(); ++i) {
    TierEnv env;
    env.index = &this->index();
    env.dram = &dram_.allocator();
    env.quotas = &quotas_;
    env.add_counters = [this](const Key128& ns, const CounterSnapshot& c) {
      this->index().AddCounters(ns, c);
    };
    env.below = i + 1 < below_.size() ? below_[i + 1].get() : nullptr;
    below_[i]->Attach(env);
    tiers_.push_back(below_[i].get());
  }
  if (!below_.empty()) dram_.SetBelow(below_.front().get());
}

ChunkStoreImpl::~ChunkStoreImpl() {
  closing_.store(true, std::memory_order_release);  // reads still queued are answered at once
  readers_.reset();
  for (std::unique_ptr<LowerTier>& tier : below_) tier.reset();  // top first: it may spill down
}

absl::StatusOr<std::unique_ptr<PendingChunk>> ChunkStoreImpl::BeginPut(const ChunkId& id,
                                                                       const ChunkMeta& meta,
                                                                       const PutHints& hints) {
  if (meta.size_bytes == 0) return absl::InvalidArgumentError("chunk size_bytes must be > 0");
  if (absl::Status s = dram_.CheckFits(meta.size_bytes); !s.ok()) return s;
  if (Locate(id) != Tier::kNone) {
    return absl::AlreadyExistsError("chunk already stored");
  }
  if (hints.session_id != 0) TouchSession(id.ns, hints.session_id);
  Allocation allocation;
  if (absl::Status s = Reserve(id.ns, meta.size_bytes, &allocation); !s.ok()) return s;
  return dram_.NewPending(id, meta, std::move(allocation), hints);
}

absl::Status ChunkStoreImpl::Reserve(const Key128& ns, uint64_t size, Allocation* out) {
  if (absl::Status s = MakeTenantRoom(ns, size); !s.ok()) return s;
  if (dram_.TryAllocate(size, out)) return absl::OkStatus();
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
  const uint64_t max_rounds = index().size() + kExtraEvictionRounds;
  for (uint64_t round = 1;; ++round) {
    if (dram_.EvictOne() == 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat("DRAM tier full: no room for ", size, " bytes and nothing evictable (every ",
                       "remaining chunk is leased, being read, or still being written)"));
    }
    if (dram_.TryAllocate(size, out)) return absl::OkStatus();
    if (round >= max_rounds) {
      return absl::ResourceExhaustedError(
          absl::StrCat("DRAM tier full: no room for ", size, " bytes after evicting ", round,
                       " chunks; concurrent puts keep taking the space"));
    }
  }
}

absl::Status ChunkStoreImpl::CommitPut(std::unique_ptr<PendingChunk> pending) {
  PutHints hints;
  absl::StatusOr<ChunkRef> chunk = dram_.Seal(pending.get(), &hints);
  if (!chunk.ok()) return chunk.status();
  const ChunkId& id = pending->id();
  const uint64_t size = (*chunk)->meta().size_bytes;
  if (hints.pin) AdmitPin(id, size, &hints);
  // The commit is the session's activity too: one that idled out since BeginPut resumes
  // (the index refuses to join a session that is not active; see SetSessionCheck).
  if (hints.session_id != 0 && !hints.pin) TouchSession(id.ns, hints.session_id);
  // False when a concurrent put of the same key committed first: ours is dropped here.
  if (!dram_.Insert(id, *chunk, /*count_put=*/true, hints)) {
    if (hints.pin) quotas_.Unpin(id.ns, size);
    return absl::OkStatus();
  }
  for (const std::unique_ptr<LowerTier>& tier : below_) tier->Committed(id, **chunk);
  return absl::OkStatus();
}

absl::StatusOr<ChunkRef> ChunkStoreImpl::Get(const ChunkId& id) {
  ChunkRef chunk = dram_.Find(id, /*count_miss=*/below_.empty());
  if (chunk != nullptr) return chunk;
  return GetMissedDram(id);
}

absl::StatusOr<ChunkRef> ChunkStoreImpl::GetMissedDram(const ChunkId& id) {
  if (below_.empty()) return absl::NotFoundError("chunk not found");  // miss counted
  ChunkRef chunk = GetBelowDram(id);
  index().RecordGet(id, chunk != nullptr);
  if (chunk == nullptr) return absl::NotFoundError("chunk not found");
  return chunk;
}

void ChunkStoreImpl::GetAsync(const ChunkId& id, uint64_t lease_id, GetCallback done) {
  // The lease has done its job once the reference (or the miss) is in hand.
  auto answer = [this, &id, lease_id](GetCallback& done, absl::StatusOr<ChunkRef> ref) {
    if (lease_id != 0) ReleaseLease(lease_id, id);
    std::move(done)(std::move(ref));
  };
  ChunkRef chunk = dram_.Find(id, /*count_miss=*/below_.empty());
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
  if (auto hold = leases_.Release(lease_id, id)) index().DropLeaseRef(hold->id, hold->generation);
}

LookupResult ChunkStoreImpl::Lookup(const Key128& ns, absl::Span<const Key128> keys,
                                    absl::Duration lease, uint64_t session_id) {
  if (session_id != 0) TouchSession(ns, session_id);
  const absl::Time now = Now();
  ExpireLeases(now);
  const PolicyClockBatch one_stamp;  // the keys of one lookup are used together
  const absl::Duration granted = std::min(lease, options_.max_lease);
  const bool take_lease = granted > absl::ZeroDuration();
  LookupResult result;
  std::vector<LeaseTable::Hold> holds;
  for (const Key128& key : keys) {
    const ChunkId id{ns, key};
    const ProbeResult probe = index().Probe(id, take_lease, session_id);
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
  index().RecordLookup(ns, keys.empty() ? Key128{} : keys.front(), result.hit_count);
  if (!holds.empty()) {
    result.lease_expires = now + granted;
    result.lease_id = leases_.Add(result.lease_expires, std::move(holds));
  }
  return result;
}

absl::Time ChunkStoreImpl::Now() const { return options_.clock ? options_.clock() : absl::Now(); }

void ChunkStoreImpl::ExpireLeases(absl::Time now) {
  for (const LeaseTable::Hold& hold : leases_.TakeExpired(now)) {
    index().DropLeaseRef(hold.id, hold.generation);
  }
}

Tier ChunkStoreImpl::Locate(const ChunkId& id) const {
  for (const StorageTier* tier : tiers_) {
    if (tier->Contains(id)) return tier->kind();
  }
  return Tier::kNone;
}

absl::Status ChunkStoreImpl::Delete(const ChunkId& id) {
  bool found = false;
  for (StorageTier* tier : tiers_) found = tier->Delete(id) || found;
  return found ? absl::OkStatus() : absl::NotFoundError("chunk not found");
}

StoreStats ChunkStoreImpl::Stats() const {
  StoreStats stats;
  stats.total = index().Totals();
  for (const auto& [ns, count] : sessions_.CountsByNamespace(Now())) stats.total.sessions += count;
  for (const StorageTier* tier : tiers_) tier->Report(&stats);
  // A get counts once, at the tier that served it; DRAM's are those no tier below served
  // (read apart from the totals, so clamped).
  uint64_t below_hits = 0;
  for (size_t i = 1; i < stats.tiers.size(); ++i) below_hits += stats.tiers[i].hits;
  stats.tiers[0].hits = stats.total.hits - std::min(stats.total.hits, below_hits);
  if (!below_.empty()) stats.nvme.promotions = promotions_.load(std::memory_order_relaxed);
  return stats;
}

CounterSnapshot ChunkStoreImpl::NamespaceCounters(const Key128& ns) const {
  CounterSnapshot c = index().NamespaceCounters(ns);
  const auto sessions = sessions_.CountsByNamespace(Now());
  if (auto it = sessions.find(ns); it != sessions.end()) c.sessions = it->second;
  return c;
}

std::vector<std::pair<Key128, CounterSnapshot>> ChunkStoreImpl::AllNamespaceCounters() const {
  std::vector<std::pair<Key128, CounterSnapshot>> all = index().AllNamespaceCounters();
  AddSessionCounts(&all);
  return all;
}

}  // namespace kvstash::storage
