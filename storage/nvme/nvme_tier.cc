#include "storage/nvme/nvme_tier.h"

#include "storage/dram/dram_allocator.h"
#include "storage/tenant_quotas.h"

namespace kvstash::storage {

absl::StatusOr<std::unique_ptr<NvmeTier>> NvmeTier::Open(const NvmeOptions& options) {
  auto db = RocksDbTier::Open(NvmeTierOptions(options));
  if (!db.ok()) return db.status();
  return std::unique_ptr<NvmeTier>(new NvmeTier(options, *std::move(db)));
}

NvmeTier::NvmeTier(const NvmeOptions& options, std::unique_ptr<RocksDbTier> db)
    : options_(options),
      db_(std::move(db)),
      read_limiter_(options.read_bytes_per_s > 0
                        ? std::make_unique<RateLimiter>(options.read_bytes_per_s)
                        : nullptr) {}

NvmeTier::~NvmeTier() = default;

void NvmeTier::Attach(const TierEnv& env) {
  env_ = env;
  // Keeps 3/4 of DRAM evictable however far demotion lags.
  demoter_ = std::make_unique<Demoter>(db_.get(), options_.demotion_threads,
                                       static_cast<size_t>(options_.demotion_queue_chunks),
                                       env.dram->capacity_bytes() / 4);
  if (options_.clean_window_percent == 0) return;
  CleanerOptions o;
  o.window_percent = options_.clean_window_percent;
  o.admission = Admission();
  cleaner_ = std::make_unique<Cleaner>(o, env.index, env.dram, demoter_.get(), db_.get());
}

bool NvmeTier::Contains(const ChunkId& id) const {
  return demoter_->Find(id) != nullptr || db_->Contains(id);
}

void NvmeTier::Admit(const EvictedEntry& evicted, ChunkRef chunk) {
  // Cleaned, write-through and promoted chunks are here already: evicting them costs no
  // write.
  if (db_->Contains(evicted.id)) return;
  if (!Admission().Admits(evicted.hits, evicted.keep)) {
    admission_declined_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // A queue still full after the wait drops it (counted).
  demoter_->Enqueue(evicted.id, std::move(chunk), absl::Milliseconds(options_.demotion_wait_ms));
}

void NvmeTier::Committed(const ChunkId& id, const StoredChunk& chunk) {
  if (!options_.write_through) return;
  // Errors are counted by the database (io_errors); DRAM serves the chunk either way.
  if (db_->Put(id, chunk).ok()) write_throughs_.fetch_add(1, std::memory_order_relaxed);
  AfterEvictions();
}

TierRead NvmeTier::Get(const ChunkId& id, bool for_get) {
  // Still in DRAM memory on its way down: serve it from there.
  if (ChunkRef queued = demoter_->Find(id)) {
    if (for_get) hits_.fetch_add(1, std::memory_order_relaxed);
    return {std::move(queued), /*promotable=*/false};
  }
  absl::StatusOr<ChunkRef> read = db_->Get(id);  // verified, or NOT_FOUND
  if (!read.ok()) {
    if (for_get) misses_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  if (!for_get) return {*std::move(read)};
  if (read_limiter_ != nullptr) read_limiter_->Acquire((*read)->meta().size_bytes);
  hits_.fetch_add(1, std::memory_order_relaxed);
  return {*std::move(read)};
}

bool NvmeTier::Delete(const ChunkId& id) {
  // Both, in this order: a demotion cancelled after landing deletes its own write.
  const bool queued = demoter_->Cancel(id);
  return db_->Delete(id).ok() || queued;
}

void NvmeTier::Clear(const Key128& ns, absl::flat_hash_set<ChunkId>* cleared) {
  // The queue first: a demotion cancelled after landing deletes its own write.
  for (const ChunkId& id : demoter_->PendingOf(ns)) {
    if (demoter_->Cancel(id)) cleared->insert(id);
  }
  db_->RemoveColdest(
      [&](const ChunkId& id) {
        if (id.ns != ns) return false;
        cleared->insert(id);
        return true;
      },
      UINT64_MAX, /*as_deletes=*/true);
}

void NvmeTier::DramEvicting() {
  if (cleaner_ != nullptr) cleaner_->Kick();  // evicting from here on: keep the tail clean
}

void NvmeTier::AfterEvictions() {
  if (!env_.quotas->any_nvme_quota()) return;
  const absl::flat_hash_map<Key128, RocksDbTier::NamespaceUsage> usage = db_->NamespaceUsages();
  for (const auto& entry : env_.quotas->NvmeQuotas()) {
    const uint64_t quota = entry.first;
    const auto& tenant = entry.second;  // a named reference: lambdas below capture it
    uint64_t used = 0;
    for (const auto& [ns, u] : usage) {
      if (tenant(ns)) used += u.bytes;
    }
    if (used <= quota) continue;
    absl::flat_hash_map<Key128, CounterSnapshot> evicted;  // per namespace, for its counters
    db_->RemoveColdest(
        [&](const ChunkId& id) {
          if (!tenant(id.ns)) return false;
          ++evicted[id.ns].quota_evictions;
          return true;
        },
        used - quota, /*as_deletes=*/false);
    for (const auto& [ns, c] : evicted) env_.add_counters(ns, c);
  }
}

void NvmeTier::AddUsage(absl::flat_hash_map<Key128, NamespaceUsage>* usage) const {
  for (const auto& [ns, n] : db_->NamespaceUsages()) {
    (*usage)[ns].tiers.push_back({kind(), n.chunks, n.bytes});
  }
}

void NvmeTier::Report(StoreStats* stats) const {
  stats->tiers.push_back(db_->Stats());
  stats->tiers.back().hits = hits_.load(std::memory_order_relaxed);
  const RocksDbTierCounters tier = db_->Counters();
  const DemoterCounters demoter = demoter_->Counters();
  NvmeCounters& n = stats->nvme;
  n.hits = hits_.load(std::memory_order_relaxed);
  n.misses = misses_.load(std::memory_order_relaxed);
  n.evictions = tier.evictions;
  n.demotions = demoter.demotions;
  n.cleanings = demoter.cleanings;
  n.demotion_drops = demoter.drops;
  n.demotion_failures = demoter.failures;
  n.demotions_pending = demoter.pending;
  n.admission_declined = admission_declined_.load(std::memory_order_relaxed);
  n.write_throughs = write_throughs_.load(std::memory_order_relaxed);
  n.checksum_failures = tier.checksum_failures;
  n.io_errors = tier.io_errors;
  n.recovered_chunks = tier.recovered_chunks;
  n.reopens = tier.reopens;
  n.gc_runs = tier.gc_runs;
  n.gc_waits = tier.gc_waits;
  n.writes_suspended = tier.writes_suspended ? 1 : 0;
}

}  // namespace kvstash::storage
