// FrequencySketch: a count-min sketch of how often keys were seen recently (4 rows of
// counters saturating at 15). Once the sketch has counted ten times as many events
// as it has columns, every counter is halved, so old popularity fades (TinyLFU's reset).
// The width follows the number of keys the owner caches (EnsureCapacity); growing it
// starts the counts afresh.
//
// Thread-safety: not thread-safe; its owner serialises calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvstash::storage {

class FrequencySketch {
 public:
  static constexpr uint32_t kMaxCount = 15;
  static constexpr int kRows = 4;
  // Heap bytes per key of EnsureCapacity at worst (the width rounds up to twice the keys;
  // one byte per row); the minimum width adds a constant.
  static constexpr uint64_t kMaxBytesPerKey = 2 * kRows;

  FrequencySketch() { Resize(kMinWidth); }
  // Keeps the width at least `keys` (rounded up to a power of two).
  void EnsureCapacity(size_t keys);
  void Increment(uint64_t key_hash);
  // Estimated recent count of key_hash, 0..kMaxCount.
  uint32_t Estimate(uint64_t key_hash) const;
  size_t width() const { return width_; }

 private:
  static constexpr size_t kMinWidth = 256;      // few collisions among a small shard's keys
  static constexpr uint64_t kResetFactor = 10;  // halve after this many events per column

  void Resize(size_t width);
  size_t Slot(int row, uint64_t key_hash) const;
  void Halve();

  size_t width_ = 0;
  std::vector<uint8_t> counts_;  // kRows rows of width_ counters
  uint64_t events_ = 0;          // increments since the last halving
};

}  // namespace kvstash::storage
