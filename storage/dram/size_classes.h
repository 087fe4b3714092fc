// SizeClasses: the object sizes the DRAM tier's slabs are cut into, and the plan for
// storing a payload smaller than one arena page.
//
// Classes start at 1 KiB and grow by ~4 steps per doubling up to page_bytes / 2. Each
// geometric step is then widened to page_bytes / n (n = objects that fit in a page, rounded
// down to 64 bytes), which costs nothing, since the page holds n objects either way, and
// removes the per-page remainder. All sizes are multiples of 64, so every object is
// cache-line aligned.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <vector>

namespace kvstash::storage {

class SizeClasses {
 public:
  static constexpr uint32_t kMinClassBytes = 1024;
  static constexpr int kMaxTailPieces = 2;

  // REQUIRES: page_bytes is a power of two >= 4096.
  explicit SizeClasses(uint64_t page_bytes);

  int count() const { return static_cast<int>(sizes_.size()); }
  uint32_t size(int cls) const { return sizes_[cls]; }
  uint32_t max_size() const { return sizes_.back(); }
  uint32_t objects_per_page(int cls) const {
    return static_cast<uint32_t>(page_bytes_ / sizes_[cls]);
  }

  // Smallest class holding `n` bytes; -1 if n > max_size().
  int ClassFor(uint64_t n) const;
  // Largest class with size < n; -1 if none.
  int LargestBelow(uint64_t n) const;

  // Classes (at most kMaxTailPieces) whose objects, in order, store `n` bytes: one object,
  // or, where that wastes much more, the largest class below n plus one for the remainder.
  // Slack stays under ~20% of n (plus up to 1 KiB for n < 1 KiB).
  // Returns the number of pieces written to `out`. REQUIRES: 0 < n < page_bytes.
  int PlanTail(uint64_t n, int out[kMaxTailPieces]) const;

 private:
  uint64_t page_bytes_;
  std::vector<uint32_t> sizes_;  // ascending
};

}  // namespace kvstash::storage
