// ChunkStoreImpl's lower-tier glue: reads below DRAM and promotion into DRAM. Without lower
// tiers each is a miss or a no-op.
#include "storage/chunk_store_impl.h"

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
  if (!dram_.CheckFits(size).ok()) return nullptr;
  Allocation allocation;
  // May evict (and demote) colder DRAM chunks, as a put would, within the tenant's DRAM
  // quota. Leased DRAM or a full quota: no promotion.
  if (!Reserve(id.ns, size, &allocation).ok()) return nullptr;
  ChunkRef promoted = dram_.Copy(chunk, std::move(allocation));
  // False when a concurrent get promoted it first; ours is still a valid copy to return.
  if (dram_.Insert(id, promoted, /*count_put=*/false)) {
    promotions_.fetch_add(1, std::memory_order_relaxed);
  }
  return promoted;
}

bool ChunkStoreImpl::PromoteForPin(const ChunkId& id) {
  for (const std::unique_ptr<LowerTier>& tier : below_) {
    const TierRead read = tier->Get(id, /*for_get=*/false);
    if (read.chunk == nullptr) continue;
    return Promote(id, *read.chunk) != nullptr && dram_.Contains(id);
  }
  return false;
}

}  // namespace kvstash::storage
