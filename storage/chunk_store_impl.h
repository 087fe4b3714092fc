// ChunkStoreImpl: the ChunkStore over the sharded index, the DRAM tier and the lease table.
//
// Space is reserved at BeginPut, evicting by policy until the payload fits; the chunk
// joins the index only at CommitPut. Expired leases are released lazily, in Lookup and
// before evicting, so the store runs no thread of its own.
//
// Thread-safety: thread-safe (see ChunkStore).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "storage/chunk_store.h"
#include "storage/dram_allocator.h"
#include "storage/index.h"
#include "storage/lease_table.h"

namespace kvstash::storage {

class ChunkStoreImpl final : public ChunkStore {
 public:
  ChunkStoreImpl(const ChunkStoreOptions& options, std::shared_ptr<DramAllocator> dram,
                 std::unique_ptr<ChunkIndex> index);

  absl::StatusOr<std::unique_ptr<PendingChunk>> BeginPut(const ChunkId& id,
                                                         const ChunkMeta& meta) override;
  absl::Status CommitPut(std::unique_ptr<PendingChunk> pending) override;
  absl::StatusOr<ChunkRef> Get(const ChunkId& id) override;
  void ReleaseLease(uint64_t lease_id, const ChunkId& id) override;
  LookupResult Lookup(const Key128& ns, absl::Span<const Key128> keys,
                      absl::Duration lease) override;
  Tier Locate(const ChunkId& id) const override;
  absl::Status Delete(const ChunkId& id) override;
  StoreStats Stats() const override;
  CounterSnapshot NamespaceCounters(const Key128& ns) const override;
  std::vector<std::pair<Key128, CounterSnapshot>> AllNamespaceCounters() const override;

 private:
  // RESOURCE_EXHAUSTED unless a payload of `size` bytes could ever fit.
  absl::Status CheckFits(uint64_t size) const;
  // Allocates `size` bytes into `out`, evicting as needed.
  absl::Status Reserve(uint64_t size, Allocation* out);
  void ExpireLeases(absl::Time now);
  // Counts the index's heap bookkeeping against the DRAM budget; call when its size changed.
  void ChargeBookkeeping();

  const ChunkStoreOptions options_;
  const std::shared_ptr<DramAllocator> dram_;
  const std::unique_ptr<ChunkIndex> index_;
  LeaseTable leases_;
};

}  // namespace kvstash::storage
