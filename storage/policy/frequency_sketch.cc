#include "storage/policy/frequency_sketch.h"

#include <algorithm>

#include "common/bits.h"

namespace kvstash::storage {

void FrequencySketch::EnsureCapacity(size_t keys) {
  if (keys <= width_) return;
  size_t width = width_;
  while (width < keys) width *= 2;
  Resize(width);
}

void FrequencySketch::Resize(size_t width) {
  width_ = width;
  counts_.assign(kRows * width_, 0);
  events_ = 0;
}

size_t FrequencySketch::Slot(int row, uint64_t key_hash) const {
  const uint64_t h = SplitMix64(key_hash + 0x632BE59BD9B4E019ull * static_cast<uint64_t>(row + 1));
  return static_cast<size_t>(row) * width_ + (h & (width_ - 1));
}

void FrequencySketch::Increment(uint64_t key_hash) {
  for (int row = 0; row < kRows; ++row) {
    uint8_t& c = counts_[Slot(row, key_hash)];
    if (c < kMaxCount) ++c;
  }
  if (++events_ >= kResetFactor * width_) Halve();
}

uint32_t FrequencySketch::Estimate(uint64_t key_hash) const {
  uint32_t estimate = kMaxCount;
  for (int row = 0; row < kRows; ++row) {
    estimate = std::min<uint32_t>(estimate, counts_[Slot(row, key_hash)]);
  }
  return estimate;
}

void FrequencySketch::Halve() {
  for (uint8_t& c : counts_) c >>= 1;
  events_ /= 2;
}

}  // namespace kvstash::storage
