#include "storage/dram/dram_tier.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/dram/dram_chunk.h"

namespace kvstash::storage {
namespace {

// Heap bytes of a chunk's DramChunk beside its index entry (ChunkIndex::BytesPerEntry):
// one make_shared allocation of the object and its control block (two counts, a vtable
// pointer). Both are charged to the DRAM budget so RSS stays within it even when the tier
// is full of 1 KiB chunks; derived from sizeof so a grown structure is charged at once.
constexpr uint64_t kDramChunkHeapBytes =
    sizeof(DramChunk) + 3 * sizeof(void*) + kMallocOverheadBytes;

}  // namespace

absl::StatusOr<std::shared_ptr<DramAllocator>> DramTier::CreateAllocator(
    const ChunkStoreOptions& options) {
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

DramTier::DramTier(const ChunkStoreOptions& options, std::shared_ptr<DramAllocator> dram,
                   std::unique_ptr<ChunkIndex> index, TenantQuotas* quotas)
    : max_chunk_bytes_(options.max_chunk_bytes),
      dram_(std::move(dram)),
      index_(std::move(index)),
      quotas_(quotas),
      checksummer_(options.background_checksums
                       ? std::make_unique<Checksummer>(
                             Checksummer::Options{},
                             [index = index_.get()](const ChunkId& id) { return index->Peek(id); })
                       : nullptr) {}

bool DramTier::Contains(const ChunkId& id) const { return index_->Locate(id) != Tier::kNone; }

TierRead DramTier::Get(const ChunkId& id, bool for_get) {
  return {for_get ? index_->Get(id, /*count_miss=*/false) : index_->Peek(id),
          /*promotable=*/false};
}

bool DramTier::Delete(const ChunkId& id) {
  // The bytes go when the last reader drops its ref; here if there is none.
  bool pinned = false;
  const ChunkRef erased = index_->Erase(id, &pinned);
  if (erased == nullptr) return false;
  const uint64_t size = erased->meta().size_bytes;
  quotas_->AddDram(id.ns, -static_cast<int64_t>(size));
  if (pinned) quotas_->Unpin(id.ns, size);
  ChargeBookkeeping();
  return true;
}

void DramTier::Clear(const Key128& ns, absl::flat_hash_set<ChunkId>* cleared) {
  const ErasedChunks erased = index_->EraseNamespace(ns);
  quotas_->AddDram(ns, -static_cast<int64_t>(erased.bytes));
  if (erased.pinned_bytes != 0) quotas_->Unpin(ns, erased.pinned_bytes);
  ChargeBookkeeping();
  cleared->insert(erased.ids.begin(), erased.ids.end());
}

void DramTier::AddUsage(absl::flat_hash_map<Key128, NamespaceUsage>* usage) const {
  for (const auto& [ns, c] : index_->AllNamespaceCounters()) {
    if (c.chunks == 0) continue;
    NamespaceUsage& u = (*usage)[ns];
    u.tiers.push_back({Tier::kDram, c.chunks, c.bytes});
    u.pinned_bytes += c.pinned_bytes;
  }
}

void DramTier::Report(StoreStats* stats) const {
  TierStats dram;
  dram.tier = Tier::kDram;
  dram.capacity_bytes = dram_->capacity_bytes();
  dram.used_bytes = dram_->used_bytes();
  std::tie(dram.chunks, dram.chunk_bytes) = index_->TierUsage(Tier::kDram);
  // Its hits are the store's (a get counts once, at the tier that served it).
  stats->tiers.push_back(dram);
}

absl::Status DramTier::CheckFits(uint64_t size) const {
  if (size > max_chunk_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("chunk of ", size, " bytes exceeds max_chunk_bytes (", max_chunk_bytes_, ")"));
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

uint64_t DramTier::EvictOne(const TenantMatcher* match) {
  EvictedEntry evicted;
  // Dropping the victim frees its bytes (eviction only picks unreferenced chunks), unless
  // the tier below keeps it until written.
  ChunkRef victim =
      match != nullptr ? index_->EvictOneMatching(*match, &evicted) : index_->EvictOne(&evicted);
  ChargeBookkeeping();
  if (victim == nullptr) return 0;
  quotas_->AddDram(evicted.id.ns, -static_cast<int64_t>(evicted.size_bytes));
  if (below_ != nullptr) below_->Admit(evicted, std::move(victim));
  return evicted.size_bytes;
}

std::unique_ptr<PendingChunk> DramTier::NewPending(const ChunkId& id, const ChunkMeta& meta,
                                                   Allocation allocation,
                                                   const PutHints& hints) const {
  auto pending = std::make_unique<DramPendingChunk>(id, meta, std::move(allocation), dram_);
  pending->set_hints(hints);
  return pending;
}

absl::StatusOr<ChunkRef> DramTier::Seal(PendingChunk* pending, PutHints* hints) const {
  auto* dram_pending = dynamic_cast<DramPendingChunk*>(pending);
  if (dram_pending == nullptr || !dram_pending->IsFrom(*dram_)) {
    return absl::InvalidArgumentError("CommitPut: not a pending chunk of this store");
  }
  absl::StatusOr<ChunkRef> chunk = dram_pending->Seal(checksummer_ != nullptr);
  if (chunk.ok()) *hints = dram_pending->hints();
  return chunk;
}

ChunkRef DramTier::Copy(const StoredChunk& chunk, Allocation allocation) const {
  // Segment to segment; the payload was verified on read, so it is not hashed again.
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
  return std::make_shared<DramChunk>(chunk.meta(), std::move(allocation), dram_);
}

bool DramTier::Insert(const ChunkId& id, ChunkRef chunk, bool count_put, const PutHints& hints) {
  const uint64_t size = chunk->meta().size_bytes;
  const bool checksum_known = static_cast<const DramChunk&>(*chunk).checksum_known();
  if (!index_->Insert(id, std::move(chunk), Tier::kDram, count_put, hints)) return false;
  quotas_->AddDram(id.ns, static_cast<int64_t>(size));
  if (!checksum_known) checksummer_->Enqueue(id);
  ChargeBookkeeping();
  return true;
}

void DramTier::ChargeBookkeeping() {
  dram_->SetMetadataBytes(index_->size() * (index_->BytesPerEntry() + kDramChunkHeapBytes));
}

}  // namespace kvstash::storage
