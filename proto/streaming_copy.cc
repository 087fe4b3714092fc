#include "proto/streaming_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kvstash {
namespace {

#if defined(__x86_64__)

// Each copies a whole number of `kBlock`-byte blocks into a 64-byte aligned `dst`.
constexpr size_t kBlock = 256;

__attribute__((target("avx512f"))) void StreamAvx512(uint8_t* dst, const uint8_t* src, size_t n) {
  for (size_t i = 0; i < n; i += kBlock) {
    const __m512i a = _mm512_loadu_si512(src + i);
    const __m512i b = _mm512_loadu_si512(src + i + 64);
    const __m512i c = _mm512_loadu_si512(src + i + 128);
    const __m512i d = _mm512_loadu_si512(src + i + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 64), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 128), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 192), d);
  }
}

__attribute__((target("avx2"))) void StreamAvx2(uint8_t* dst, const uint8_t* src, size_t n) {
  for (size_t i = 0; i < n; i += kBlock) {
    for (size_t j = 0; j < kBlock; j += 128) {
      const auto* s = reinterpret_cast<const __m256i*>(src + i + j);
      auto* d = reinterpret_cast<__m256i*>(dst + i + j);
      const __m256i r0 = _mm256_loadu_si256(s);
      const __m256i r1 = _mm256_loadu_si256(s + 1);
      const __m256i r2 = _mm256_loadu_si256(s + 2);
      const __m256i r3 = _mm256_loadu_si256(s + 3);
      _mm256_stream_si256(d, r0);
      _mm256_stream_si256(d + 1, r1);
      _mm256_stream_si256(d + 2, r2);
      _mm256_stream_si256(d + 3, r3);
    }
  }
}

void StreamSse2(uint8_t* dst, const uint8_t* src, size_t n) {
  for (size_t i = 0; i < n; i += 64) {
    const auto* s = reinterpret_cast<const __m128i*>(src + i);
    auto* d = reinterpret_cast<__m128i*>(dst + i);
    const __m128i r0 = _mm_loadu_si128(s);
    const __m128i r1 = _mm_loadu_si128(s + 1);
    const __m128i r2 = _mm_loadu_si128(s + 2);
    const __m128i r3 = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, r0);
    _mm_stream_si128(d + 1, r1);
    _mm_stream_si128(d + 2, r2);
    _mm_stream_si128(d + 3, r3);
  }
}

using StreamFn = void (*)(uint8_t*, const uint8_t*, size_t);

// The unit's copy loop, or null when the CPU lacks it.
StreamFn StreamOf(StreamingUnit unit) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2");
  switch (unit) {
    case StreamingUnit::kAuto:
      return avx512 ? StreamAvx512 : avx2 ? StreamAvx2 : StreamSse2;
    case StreamingUnit::kAvx512:
      return avx512 ? StreamAvx512 : nullptr;
    case StreamingUnit::kAvx2:
      return avx2 ? StreamAvx2 : nullptr;
    case StreamingUnit::kSse2:
      return StreamSse2;
  }
  return nullptr;
}

// memcpy for the unaligned head and the tail, `stream` for the aligned blocks between;
// no fence.
void CopyWith(StreamFn stream, void* dst, const void* src, size_t n) {
  if (n == 0) return;  // dst and src may then be null, which memcpy does not allow
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  const size_t head = std::min<size_t>(n, (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63);
  std::memcpy(d, s, head);
  const size_t body = (n - head) / kBlock * kBlock;
  stream(d + head, s + head, body);
  std::memcpy(d + head + body, s + head + body, n - head - body);
}

#endif  // __x86_64__

}  // namespace

void StreamingCopyUnfenced(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  static const StreamFn stream = StreamOf(StreamingUnit::kAuto);
  CopyWith(stream, dst, src, n);
#else
  if (n > 0) std::memcpy(dst, src, n);
#endif
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

bool StreamingCopyWith(StreamingUnit unit, void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  const StreamFn stream = StreamOf(unit);
  if (stream == nullptr) return false;
  CopyWith(stream, dst, src, n);
  StreamingFence();
  return true;
#else
  if (unit != StreamingUnit::kAuto) return false;
  if (n > 0) std::memcpy(dst, src, n);
  return true;
#endif
}

}  // namespace kvstash
