// ChunkStoreImpl's NVMe glue: demotion of DRAM victims, reads below DRAM, promotion,
// write-through and the NVMe part of Stats. Every function here is a no-op (or a miss) when
// the NVMe tier is off, so the DRAM-only store behaves exactly as before.
#include <cstring>

#include "storage/chunk_store_impl.h"
#include "storage/dram_chunk.h"

namespace kvstash::storage {

std::unique_ptr<Cleaner> ChunkStoreImpl::MakeCleaner() {
  if (nvme_ == nullptr || options_.nvme.clean_window_percent == 0) return nullptr;
  CleanerOptions o;
  o.window_percent = options_.nvme.clean_window_percent;
  o.admission = Admission();
  return std::make_unique<Cleaner>(o, index_.get(), dram_.get(), demoter_.get(), nvme_.get());
}

void ChunkStoreImpl::Demote(const EvictedEntry& evicted, ChunkRef victim) {
  if (nvme_ == nullptr) return;
  const ChunkId& id = evicted.id;
  // Cleaned, write-through and promoted chunks are on NVMe already: evicting them costs
  // no write.
  if (nvme_->Contains(id)) return;
  if (!Admission().Admits(evicted.hits, evicted.keep)) {
    admission_declined_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // A queue still full after the wait drops it (counted).
  demoter_->Enqueue(id, std::move(victim), absl::Milliseconds(options_.nvme.demotion_wait_ms));
}

bool ChunkStoreImpl::BelowDram(const ChunkId& id) const {
  if (nvme_ == nullptr) return false;
  return demoter_->Find(id) != nullptr || nvme_->Contains(id);
}

ChunkRef ChunkStoreImpl::GetBelowDram(const ChunkId& id) {
  // Still in DRAM memory on its way down: serve it from there.
  if (ChunkRef queued = demoter_->Find(id)) {
    nvme_hits_.fetch_add(1, std::memory_order_relaxed);
    return queued;
  }
  absl::StatusOr<ChunkRef> read = nvme_->Get(id);  // verified, or NOT_FOUND
  if (!read.ok()) {
    nvme_misses_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (read_limiter_ != nullptr) read_limiter_->Acquire((*read)->meta().size_bytes);
  nvme_hits_.fetch_add(1, std::memory_order_relaxed);
  if (!options_.nvme.promote_on_hit) return *std::move(read);
  ChunkRef promoted = Promote(id, **read);
  return promoted != nullptr ? promoted : *std::move(read);
}

ChunkRef ChunkStoreImpl::Promote(const ChunkId& id, const StoredChunk& chunk) {
  const uint64_t size = chunk.meta().size_bytes;
  if (!CheckFits(size).ok()) return nullptr;
  Allocation allocation;
  // May evict (and demote) colder DRAM chunks, as a put would, within the tenant's DRAM
  // quota. Leased DRAM or a full quota: no promotion.
  if (!Reserve(id.ns, size, &allocation).ok()) return nullptr;
  // Copy segment to segment; the payload was verified on read, so it is not hashed again.
  size_t src_index = 0;
  uint64_t src_offset = 0;
  const absl::Span<const Segment> src = chunk.segments();
  for (const Segment& dst : allocation.segments) {
    uint64_t done = 0;
    while (done < dst.size) {
      const uint64_t n = std::min<uint64_t>(dst.size - done, src[src_index].size - src_offset);
      std::memcpy(const_cast<uint8_t*>(dst.data) + done, src[src_index].data + src_offset, n);
      done += n;
      src_offset += n;
      if (src_offset == src[src_index].size) {
        ++src_index;
        src_offset = 0;
      }
    }
  }
  ChunkRef promoted = std::make_shared<DramChunk>(chunk.meta(), std::move(allocation), dram_);
  // False when a concurrent get promoted it first; ours is still a valid copy to return.
  if (index_->Insert(id, promoted, Tier::kDram, /*count_put=*/false)) {
    quotas_.AddDram(id.ns, static_cast<int64_t>(size));
    ChargeBookkeeping();
    promotions_.fetch_add(1, std::memory_order_relaxed);
  }
  return promoted;
}

bool ChunkStoreImpl::PromoteForPin(const ChunkId& id) {
  if (nvme_ == nullptr) return false;
  ChunkRef below = demoter_->Find(id);
  if (below == nullptr) {
    absl::StatusOr<ChunkRef> read = nvme_->Get(id);  // verified, or NOT_FOUND
    if (!read.ok()) return false;
    below = *std::move(read);
  }
  return Promote(id, *below) != nullptr && index_->Locate(id) == Tier::kDram;
}

uint64_t ChunkStoreImpl::ClearBelowDram(const Key128& ns,
                                        const absl::flat_hash_set<ChunkId>& counted) {
  if (nvme_ == nullptr) return 0;
  absl::flat_hash_set<ChunkId> cleared;
  // The queue first: a demotion cancelled after landing deletes its own write.
  for (const ChunkId& id : demoter_->PendingOf(ns)) {
    if (demoter_->Cancel(id) && !counted.contains(id)) cleared.insert(id);
  }
  nvme_->RemoveColdest(
      [&](const ChunkId& id) {
        if (id.ns != ns) return false;
        if (!counted.contains(id)) cleared.insert(id);
        return true;
      },
      UINT64_MAX, /*as_deletes=*/true);
  return cleared.size();
}

void ChunkStoreImpl::WriteThrough(const ChunkId& id, const StoredChunk& chunk) {
  // Errors are counted by the tier (io_errors); DRAM serves the chunk either way.
  if (nvme_->Put(id, chunk).ok()) write_throughs_.fetch_add(1, std::memory_order_relaxed);
}

void ChunkStoreImpl::AddNvmeStats(StoreStats* stats) const {
  if (nvme_ == nullptr) return;
  stats->tiers.push_back(nvme_->Stats());
  const RocksDbTierCounters tier = nvme_->Counters();
  const DemoterCounters demoter = demoter_->Counters();
  NvmeCounters& n = stats->nvme;
  n.hits = nvme_hits_.load(std::memory_order_relaxed);
  n.misses = nvme_misses_.load(std::memory_order_relaxed);
  n.evictions = tier.evictions;
  n.demotions = demoter.demotions;
  n.cleanings = demoter.cleanings;
  n.demotion_drops = demoter.drops;
  n.demotion_failures = demoter.failures;
  n.demotions_pending = demoter.pending;
  n.admission_declined = admission_declined_.load(std::memory_order_relaxed);
  n.promotions = promotions_.load(std::memory_order_relaxed);
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
