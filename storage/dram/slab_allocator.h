// SlabAllocator: fixed-size objects (one SizeClasses class each) cut from arena pages.
//
// A class takes a page from the arena when it has no free object and hands the page back
// the moment its last object is freed, so memory moves freely between small objects and
// whole-page chunks. Objects are carved lazily (a bump index per page) and free objects are
// chained through their own first bytes: no page is written before its objects are used.
//
// Thread-safety: thread-safe; one mutex per size class.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/dram/arena.h"
#include "storage/dram/size_classes.h"

namespace kvstash::storage {

class SlabAllocator {
 public:
  // `arena` must outlive this allocator.
  explicit SlabAllocator(Arena* arena);
  SlabAllocator(const SlabAllocator&) = delete;
  SlabAllocator& operator=(const SlabAllocator&) = delete;

  const SizeClasses& classes() const { return classes_; }

  // An object of class `cls`, or nullptr when the class has no free object and the arena
  // no free page. The memory is uninitialised.
  uint8_t* Allocate(int cls);
  // REQUIRES: p came from Allocate(cls) and was not freed since.
  void Free(int cls, uint8_t* p);

  // Object bytes handed out (class sizes, so slack inside objects is included).
  uint64_t object_bytes_in_use() const { return object_bytes_.load(std::memory_order_relaxed); }
  // Arena pages currently owned by slabs.
  uint32_t slab_pages() const { return slab_pages_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};

  // Per slab page; guarded by the mutex of the class that owns the page.
  struct PageState {
    uint32_t prev = kNone;  // links in the class's list of pages with free objects
    uint32_t next = kNone;
    uint32_t free_head = kNone;  // first freed object (index in page), chained in the objects
    uint32_t bump = 0;           // objects at and above this index were never handed out
    uint32_t in_use = 0;
    bool listed = false;  // in the class's partial list
  };
  struct alignas(64) ClassState {
    absl::Mutex mu;
    uint32_t partial_head ABSL_GUARDED_BY(mu) = kNone;  // pages with a free object
  };

  uint8_t* TakeObject(int cls, uint32_t page) ABSL_EXCLUSIVE_LOCKS_REQUIRED(class_[cls].mu);
  void Link(int cls, uint32_t page) ABSL_EXCLUSIVE_LOCKS_REQUIRED(class_[cls].mu);
  void Unlink(int cls, uint32_t page) ABSL_EXCLUSIVE_LOCKS_REQUIRED(class_[cls].mu);

  Arena* const arena_;
  const SizeClasses classes_;
  std::unique_ptr<ClassState[]> class_;
  std::vector<PageState> pages_;  // indexed by arena page
  std::atomic<uint64_t> object_bytes_{0};
  std::atomic<uint32_t> slab_pages_{0};
};

}  // namespace kvstash::storage
