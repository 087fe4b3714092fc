// DramAllocator: payload memory for DRAM chunks, from one Arena.
//
// A payload of `size` bytes becomes floor(size / page_bytes) whole arena pages followed by
// a tail of at most SizeClasses::kMaxTailPieces slab objects (none when size is a multiple
// of page_bytes). Whole pages have no slack; a tail has about 20% at most (1 KiB minimum).
// Allocation never calls malloc except to grow the segment list past 4 entries.
//
// Thread-safety: thread-safe. An Allocation is a plain value owned by one thread at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "storage/chunk.h"
#include "storage/dram/arena.h"
#include "storage/dram/slab_allocator.h"

namespace kvstash::storage {

// Memory of one payload. Move-only; the moved-from value is empty.
struct Allocation {
  // Payload pieces in order; sizes add up to the requested size. The first `num_pages` are
  // whole, page-aligned arena pages; the rest are slab objects (64-byte aligned).
  absl::InlinedVector<Segment, 4> segments;
  uint32_t num_pages = 0;
  int8_t tail_class[SizeClasses::kMaxTailPieces] = {-1, -1};

  Allocation() = default;
  Allocation(Allocation&& other) noexcept { *this = std::move(other); }
  Allocation& operator=(Allocation&& other) noexcept;
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  bool empty() const { return segments.empty(); }
};

class DramAllocator {
 public:
  static absl::StatusOr<std::shared_ptr<DramAllocator>> Create(uint64_t capacity_bytes,
                                                               uint64_t page_bytes,
                                                               Arena::HugePages huge,
                                                               bool prefault = false);
  // Over an existing arena (Arena::CreateOn for supplied memory).
  static std::shared_ptr<DramAllocator> Create(std::unique_ptr<Arena> arena);

  // Fills `out` with memory for `size` bytes. Returns false (out empty) when the arena
  // cannot provide it right now. REQUIRES: size > 0, out->empty().
  bool TryAllocate(uint64_t size, Allocation* out);
  // Returns the memory of `a` and leaves it empty. No-op on an empty allocation.
  void Free(Allocation* a);

  // Counts `bytes` of bookkeeping kept outside the arena against its capacity (in whole
  // pages, rounded down), so that payload plus bookkeeping stay within the budget.
  void SetMetadataBytes(uint64_t bytes) {
    arena_->SetReservedPages(
        static_cast<uint32_t>(std::min<uint64_t>(bytes / page_bytes(), arena_->num_pages())));
  }

  // Bytes `size` would take from the arena's objects and pages, slack included.
  uint64_t FootprintBytes(uint64_t size) const;

  uint64_t capacity_bytes() const { return arena_->capacity_bytes(); }
  uint64_t page_bytes() const { return arena_->page_bytes(); }
  // Arena pages in use (whole-page chunks and slab pages) in bytes: the tier's usage.
  uint64_t used_bytes() const { return uint64_t{arena_->pages_in_use()} * page_bytes(); }
  const Arena& arena() const { return *arena_; }
  const SlabAllocator& slabs() const { return slabs_; }

 private:
  explicit DramAllocator(std::unique_ptr<Arena> arena);

  bool AllocateTail(uint64_t tail, Allocation* out);

  std::unique_ptr<Arena> arena_;
  SlabAllocator slabs_;
};

}  // namespace kvstash::storage
