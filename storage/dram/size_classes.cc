#include "storage/dram/size_classes.h"

#include <algorithm>

namespace kvstash::storage {

SizeClasses::SizeClasses(uint64_t page_bytes) : page_bytes_(page_bytes) {
  const uint64_t largest = page_bytes / 2;
  for (uint64_t base = kMinClassBytes; base <= largest; base *= 2) {
    for (uint64_t step = 0; step < 4; ++step) {
      const uint64_t geometric = base + base * step / 4;
      if (geometric > largest) break;
      const uint64_t per_page = page_bytes / geometric;
      const uint64_t widened = page_bytes / per_page / 64 * 64;
      if (sizes_.empty() || sizes_.back() < widened) {
        sizes_.push_back(static_cast<uint32_t>(widened));
      }
    }
  }
}

int SizeClasses::ClassFor(uint64_t n) const {
  auto it = std::lower_bound(sizes_.begin(), sizes_.end(), n);
  return it == sizes_.end() ? -1 : static_cast<int>(it - sizes_.begin());
}

int SizeClasses::LargestBelow(uint64_t n) const {
  auto it = std::lower_bound(sizes_.begin(), sizes_.end(), n);
  return it == sizes_.begin() ? -1 : static_cast<int>(it - sizes_.begin()) - 1;
}

int SizeClasses::PlanTail(uint64_t n, int out[kMaxTailPieces]) const {
  const int single = ClassFor(n);
  const int first = LargestBelow(n);
  int second = -1;
  if (first >= 0) second = ClassFor(n - sizes_[first]);
  // A second piece costs a segment (and maybe a slab page of another class), so it is taken
  // only where it saves more than an eighth of n: the coarse classes above page_bytes / 4.
  if (second >= 0 &&
      (single < 0 || uint64_t{sizes_[first]} + sizes_[second] + n / 8 < sizes_[single])) {
    out[0] = first;
    out[1] = second;
    return 2;
  }
  out[0] = single;
  return 1;
}

}  // namespace kvstash::storage
