// Arena: the DRAM tier's one pre-allocated mapping, carved into equal pages, plus the pool
// of free pages. Everything above it (slabs, chunk allocations) takes whole pages from here,
// so the mapping size is the tier's hard byte budget.
//
// The arena never writes to a page it has not handed out, and hands out pages that were
// used before ahead of never-touched ones, so the process RSS follows the high-water mark of
// pages in use rather than the mapping size. The owner may also reserve pages for memory it
// keeps elsewhere (chunk bookkeeping): reserved pages are never handed out, and free pages
// in excess of what may still be handed out are given back to the kernel (MADV_DONTNEED),
// so that pages in use + reserved memory + resident free pages stay within the capacity.
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/dram/arena_memory.h"

namespace kvstash::storage {

class Arena {
 public:
  using HugePages = storage::HugePages;
  // What actually backs the mapping.
  enum class Backing {
    kPlain,            // 4 KiB pages, transparent huge pages disabled for the range
    kTransparentHuge,  // 4 KiB mapping with madvise(MADV_HUGEPAGE)
    kHugeTlb,          // MAP_HUGETLB: huge pages reserved at mmap time
    kSupplied,         // ArenaMemory from the owner (shared memory); trimmed by MADV_REMOVE
  };
  static constexpr uint32_t kNoPage = ~uint32_t{0};

  // Maps floor(capacity_bytes / page_bytes) pages. kOn fails (RESOURCE_EXHAUSTED) when
  // MAP_HUGETLB fails; kAuto then falls back to transparent huge pages.
  // REQUIRES: page_bytes is a power of two >= 4096 and capacity_bytes >= page_bytes.
  // With `prefault` a background thread faults every page in, a slice at a time, so that
  // puts soon stop paying for page zeroing on the data path while creation returns at once
  // (faulting in takes seconds per GiB of shared memory on some hosts). It stops when done,
  // when the arena first gives pages back to the kernel, or when the arena is destroyed.
  static absl::StatusOr<std::unique_ptr<Arena>> Create(uint64_t capacity_bytes, uint64_t page_bytes,
                                                       HugePages huge, bool prefault = false);
  // The same over memory the owner supplies; the arena owns it from now on.
  // REQUIRES: memory->size() >= page_bytes, page geometry as above.
  static absl::StatusOr<std::unique_ptr<Arena>> CreateOn(std::unique_ptr<ArenaMemory> memory,
                                                         uint64_t page_bytes, bool prefault);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Takes `n` pages, all or nothing, passing each to `take` (called under the pool lock:
  // it must not call back into the arena). Returns false, taking none, unless `n` pages
  // are available (free and not reserved).
  bool AllocatePages(uint32_t n, absl::FunctionRef<void(uint32_t page)> take);
  uint32_t AllocatePage();  // kNoPage when none is free
  // Returns pages page_at(0) .. page_at(n - 1) to the pool.
  void FreePages(uint32_t n, absl::FunctionRef<uint32_t(uint32_t i)> page_at);
  void FreePage(uint32_t page) {
    FreePages(1, [page](uint32_t) { return page; });
  }
  // Sets how many pages stand for memory the owner holds outside the arena. Cheap when
  // unchanged; may madvise free pages away when it grows.
  void SetReservedPages(uint32_t pages);

  uint8_t* page_data(uint32_t page) const { return base_ + uint64_t{page} * page_bytes_; }
  // REQUIRES: p points into the arena.
  uint32_t page_of(const void* p) const {
    return static_cast<uint32_t>((static_cast<const uint8_t*>(p) - base_) >> page_shift_);
  }
  bool contains(const void* p) const {
    auto* b = static_cast<const uint8_t*>(p);
    return b >= base_ && b < base_ + capacity_bytes();
  }

  uint64_t page_bytes() const { return page_bytes_; }
  uint32_t num_pages() const { return num_pages_; }
  uint64_t capacity_bytes() const { return uint64_t{num_pages_} * page_bytes_; }
  uint32_t pages_in_use() const { return pages_in_use_.load(std::memory_order_relaxed); }
  uint32_t reserved_pages() const { return reserved_pages_.load(std::memory_order_relaxed); }
  // Pages AllocatePages may hand out now (a relaxed snapshot).
  uint32_t available_pages() const {
    const uint64_t taken = uint64_t{pages_in_use()} + reserved_pages();
    return taken >= num_pages_ ? 0 : static_cast<uint32_t>(num_pages_ - taken);
  }
  Backing backing() const { return backing_; }
  const uint8_t* base() const { return base_; }

 private:
  Arena(uint8_t* base, uint64_t map_bytes, uint64_t page_bytes, uint32_t num_pages,
        Backing backing);

  std::unique_ptr<ArenaMemory> supplied_;  // kSupplied only
  uint8_t* const base_;
  const uint64_t map_bytes_;  // length to munmap
  const uint64_t page_bytes_;
  const int page_shift_;
  const uint32_t num_pages_;
  const Backing backing_;
  // Gives surplus touched free pages back to the kernel.
  void TrimLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the background fault-in of the first `bytes` of the mapping.
  void StartPrefault(uint64_t bytes);

  std::atomic<uint32_t> pages_in_use_{0};
  std::atomic<uint32_t> reserved_pages_{0};  // written under mu_

  absl::Mutex mu_;
  // Freed pages still resident, reused last-in first-out so touched pages go out first.
  std::vector<uint32_t> free_ ABSL_GUARDED_BY(mu_);
  // Freed pages given back to the kernel by TrimLocked; not resident.
  std::vector<uint32_t> clean_ ABSL_GUARDED_BY(mu_);
  // Pages at and above this index were never handed out (and so never touched).
  uint32_t next_fresh_ ABSL_GUARDED_BY(mu_) = 0;

  // Held by the background fault-in for one slice, and by a trim while it stops it, so no
  // page is faulted in again after the trim gave it back.
  absl::Mutex prefault_mu_ ABSL_ACQUIRED_AFTER(mu_);
  bool prefault_stop_ ABSL_GUARDED_BY(prefault_mu_) = false;
  std::thread prefault_;
};

}  // namespace kvstash::storage
