#include "storage/dram/slab_allocator.h"

#include <cstring>

namespace kvstash::storage {

SlabAllocator::SlabAllocator(Arena* arena)
    : arena_(arena),
      classes_(arena->page_bytes()),
      class_(new ClassState[classes_.count()]),
      pages_(arena->num_pages()) {}

uint8_t* SlabAllocator::Allocate(int cls) {
  ClassState& c = class_[cls];
  absl::MutexLock lock(&c.mu);
  uint32_t page = c.partial_head;
  if (page == kNone) {
    page = arena_->AllocatePage();
    if (page == Arena::kNoPage) return nullptr;
    pages_[page] = PageState{};
    slab_pages_.fetch_add(1, std::memory_order_relaxed);
    Link(cls, page);
  }
  object_bytes_.fetch_add(classes_.size(cls), std::memory_order_relaxed);
  return TakeObject(cls, page);
}

uint8_t* SlabAllocator::TakeObject(int cls, uint32_t page) {
  PageState& ps = pages_[page];
  const uint32_t size = classes_.size(cls);
  uint8_t* const base = arena_->page_data(page);
  uint32_t index;
  if (ps.free_head != kNone) {
    index = ps.free_head;
    std::memcpy(&ps.free_head, base + uint64_t{index} * size, sizeof(ps.free_head));
  } else {
    index = ps.bump++;
  }
  ++ps.in_use;
  if (ps.free_head == kNone && ps.bump == classes_.objects_per_page(cls)) Unlink(cls, page);
  return base + uint64_t{index} * size;
}

void SlabAllocator::Free(int cls, uint8_t* p) {
  const uint32_t page = arena_->page_of(p);
  const uint32_t size = classes_.size(cls);
  object_bytes_.fetch_sub(size, std::memory_order_relaxed);
  ClassState& c = class_[cls];
  absl::MutexLock lock(&c.mu);
  PageState& ps = pages_[page];
  if (--ps.in_use == 0) {
    // Back to the pool so whole-page chunks and other classes can use it.
    if (ps.listed) Unlink(cls, page);
    slab_pages_.fetch_sub(1, std::memory_order_relaxed);
    arena_->FreePage(page);
    return;
  }
  const auto index = static_cast<uint32_t>((p - arena_->page_data(page)) / size);
  std::memcpy(p, &ps.free_head, sizeof(ps.free_head));
  ps.free_head = index;
  if (!ps.listed) Link(cls, page);
}

void SlabAllocator::Link(int cls, uint32_t page) {
  ClassState& c = class_[cls];
  PageState& ps = pages_[page];
  ps.prev = kNone;
  ps.next = c.partial_head;
  if (c.partial_head != kNone) pages_[c.partial_head].prev = page;
  c.partial_head = page;
  ps.listed = true;
}

void SlabAllocator::Unlink(int cls, uint32_t page) {
  ClassState& c = class_[cls];
  PageState& ps = pages_[page];
  if (ps.prev != kNone) {
    pages_[ps.prev].next = ps.next;
  } else {
    c.partial_head = ps.next;
  }
  if (ps.next != kNone) pages_[ps.next].prev = ps.prev;
  ps.prev = ps.next = kNone;
  ps.listed = false;
}

}  // namespace kvstash::storage
