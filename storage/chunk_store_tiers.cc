// ChunkStoreImpl's lower-tier glue: reads below DRAM, promotion into DRAM, and the calls
// that reach every lower tier. Without lower tiers each is a miss or a no-op.
#include <cstring>

#include "storage/chunk_store_impl.h"
#include "storage/dram/dram_chunk.h"

namespace kvstash::storage {

bool ChunkStoreImpl::AnyBlockingTier() const {
  for (const std::unique_ptr<LowerTier>& tier : below_) {
    if (tier->blocking()) return true;
  }
  return false;
}

Tier ChunkStoreImpl::LocateBelow(const ChunkId& id) const {
  for (const std::unique_ptr<LowerTier>& tier : below_) {
    if (tier->Contains(id)) return tier->kind();
  }
  return Tier::kNone;
}

ChunkRef ChunkStoreImpl::GetBelowDram(const ChunkId& id) {
  for (const std::unique_ptr<LowerTier>& tier : below_) {
    TierRead read = tier->Get(id, /*for_get=*/true);
    if (read.chunk == nullptr) continue;
    if (!options_.nvme.promote_on_hit || !read.promotable) return read.chunk;
    ChunkRef promoted = Promote(id, *read.chunk);
    return promoted != nullptr ? promoted : read.chunk;
  }
  return nullptr;
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
  for (const std::unique_ptr<LowerTier>& tier : below_) {
    const TierRead read = tier->Get(id, /*for_get=*/false);
    if (read.chunk == nullptr) continue;
    return Promote(id, *read.chunk) != nullptr && index_->Locate(id) == Tier::kDram;
  }
  return false;
}

uint64_t ChunkStoreImpl::ClearBelowDram(const Key128& ns,
                                        const absl::flat_hash_set<ChunkId>& counted) {
  absl::flat_hash_set<ChunkId> cleared;
  for (const std::unique_ptr<LowerTier>& tier : below_) tier->Clear(ns, &cleared);
  uint64_t n = 0;
  for (const ChunkId& id : cleared) n += counted.contains(id) ? 0 : 1;
  return n;
}

}  // namespace kvstash::storage
