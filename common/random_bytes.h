// RandomBytes: reproducible random payloads for tests and benchmarks.
//
// Thread-safety: a function of its arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace kvstash {

// `n` bytes from a Mersenne Twister seeded with `seed`.
inline std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

}  // namespace kvstash
