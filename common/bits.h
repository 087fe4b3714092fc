// Bit arithmetic shared by config validation, the allocators and hashing.
//
// Thread-safety: functions of their arguments.
#pragma once

#include <cstdint>

namespace kvstash {

constexpr bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// One round of SplitMix64 (Steele et al.): spreads every input bit over all output bits.
// For sketches and test patterns; not a cryptographic hash.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace kvstash
