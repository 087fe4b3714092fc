#include "storage/dram/dram_allocator.h"

#include <utility>

namespace kvstash::storage {

Allocation& Allocation::operator=(Allocation&& other) noexcept {
  segments = std::move(other.segments);
  other.segments.clear();
  num_pages = std::exchange(other.num_pages, 0);
  for (int i = 0; i < SizeClasses::kMaxTailPieces; ++i) {
    tail_class[i] = std::exchange(other.tail_class[i], -1);
  }
  return *this;
}

absl::StatusOr<std::shared_ptr<DramAllocator>> DramAllocator::Create(uint64_t capacity_bytes,
                                                                     uint64_t page_bytes,
                                                                     Arena::HugePages huge,
                                                                     bool prefault) {
  auto arena = Arena::Create(capacity_bytes, page_bytes, huge, prefault);
  if (!arena.ok()) return arena.status();
  return Create(*std::move(arena));
}

std::shared_ptr<DramAllocator> DramAllocator::Create(std::unique_ptr<Arena> arena) {
  return std::shared_ptr<DramAllocator>(new DramAllocator(std::move(arena)));
}

DramAllocator::DramAllocator(std::unique_ptr<Arena> arena)
    : arena_(std::move(arena)), slabs_(arena_.get()) {}

bool DramAllocator::TryAllocate(uint64_t size, Allocation* out) {
  const uint64_t page = page_bytes();
  const uint64_t whole = size / page;
  if (whole > arena_->available_pages()) return false;  // cheap early out under eviction
  if (whole > 0) {
    // Reserved before taking the pool lock so no malloc happens under it.
    out->segments.reserve(whole + SizeClasses::kMaxTailPieces);
    const bool ok = arena_->AllocatePages(static_cast<uint32_t>(whole), [&](uint32_t p) {
      out->segments.push_back({arena_->page_data(p), page});
    });
    if (!ok) return false;
    out->num_pages = static_cast<uint32_t>(whole);
  }
  if (size % page != 0 && !AllocateTail(size % page, out)) {
    Free(out);
    return false;
  }
  return true;
}

bool DramAllocator::AllocateTail(uint64_t tail, Allocation* out) {
  int plan[SizeClasses::kMaxTailPieces];
  const int pieces = slabs_.classes().PlanTail(tail, plan);
  for (int i = 0; i < pieces; ++i) {
    uint8_t* obj = slabs_.Allocate(plan[i]);
    if (obj == nullptr) return false;  // caller frees what was taken
    const uint64_t piece = i + 1 < pieces ? slabs_.classes().size(plan[i]) : tail;
    out->segments.push_back({obj, piece});
    out->tail_class[i] = static_cast<int8_t>(plan[i]);
    tail -= piece;
  }
  return true;
}

void DramAllocator::Free(Allocation* a) {
  if (a->empty()) return;
  if (a->num_pages > 0) {
    arena_->FreePages(a->num_pages,
                      [&](uint32_t i) { return arena_->page_of(a->segments[i].data); });
  }
  for (size_t i = a->num_pages; i < a->segments.size(); ++i) {
    const int cls = a->tail_class[i - a->num_pages];
    slabs_.Free(cls, const_cast<uint8_t*>(a->segments[i].data));
  }
  a->segments.clear();
  a->num_pages = 0;
  a->tail_class[0] = a->tail_class[1] = -1;
}

uint64_t DramAllocator::FootprintBytes(uint64_t size) const {
  const uint64_t page = page_bytes();
  uint64_t bytes = size / page * page;
  if (size % page == 0) return bytes;
  int plan[SizeClasses::kMaxTailPieces];
  const int pieces = slabs_.classes().PlanTail(size % page, plan);
  for (int i = 0; i < pieces; ++i) bytes += slabs_.classes().size(plan[i]);
  return bytes;
}

}  // namespace kvstash::storage
