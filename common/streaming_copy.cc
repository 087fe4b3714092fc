#include "common/streaming_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace kvstash {

#if defined(__x86_64__)
namespace {

// Copies 64 bytes per step from s[i] on while a whole step fits, storing each 16 bytes
// with `store`; returns the first byte not copied.
template <typename Store>
size_t CopySteps(uint8_t* d, const uint8_t* s, size_t i, size_t n, Store store) {
  for (; i + 64 <= n; i += 64) {
    const auto* from = reinterpret_cast<const __m128i*>(s + i);
    auto* to = reinterpret_cast<__m128i*>(d + i);
    const __m128i r0 = _mm_loadu_si128(from);
    const __m128i r1 = _mm_loadu_si128(from + 1);
    const __m128i r2 = _mm_loadu_si128(from + 2);
    const __m128i r3 = _mm_loadu_si128(from + 3);
    store(to, r0);
    store(to + 1, r1);
    store(to + 2, r2);
    store(to + 3, r3);
  }
  return i;
}

}  // namespace
#endif

void StreamingCopyUnfenced(void* dst, const void* src, size_t n) {
  if (n == 0) return;  // dst and src may then be null, which memcpy does not allow
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  size_t i = 0;
#if defined(__x86_64__)
  // memcpy up to a 16-byte aligned destination, then 64 bytes per step with streaming
  // stores, then memcpy for the tail.
  i = std::min<size_t>(n, (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15);
  std::memcpy(d, s, i);
  i = CopySteps(d, s, i, n, [](__m128i* to, __m128i v) { _mm_stream_si128(to, v); });
#endif
  std::memcpy(d + i, s + i, n - i);
}

void CopyBytes(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  size_t i = 0;
#if defined(__x86_64__)
  const uintptr_t distance =
      (reinterpret_cast<uintptr_t>(d) - reinterpret_cast<uintptr_t>(s)) & 4095;
  if (n >= 2048 && distance > 0 && distance < 64) {
    i = CopySteps(d, s, i, n, [](__m128i* to, __m128i v) { _mm_storeu_si128(to, v); });
  }
#endif
  if (n > i) std::memcpy(d + i, s + i, n - i);
}

void StreamingFence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

void StreamingCopy(void* dst, const void* src, size_t n) {
  StreamingCopyUnfenced(dst, src, n);
  StreamingFence();
}

}  // namespace kvstash
