#include "common/streaming_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "gtest/gtest.h"

namespace kvstash {
namespace {

constexpr uint8_t kGuard = 0xA5;
constexpr size_t kPad = 256;  // guard bytes on each side of the destination

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  uint32_t x = 12345;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

// Copies `n` bytes from src+src_off to dst+dst_off and checks the copy and that not a byte
// around it changed.
void CheckCopy(size_t n, size_t src_off, size_t dst_off, bool fenced) {
  const std::vector<uint8_t> src = Pattern(n + src_off);
  std::vector<uint8_t> dst(n + dst_off + 2 * kPad, kGuard);
  uint8_t* to = dst.data() + kPad + dst_off;
  if (fenced) {
    StreamingCopy(to, src.data() + src_off, n);
  } else {
    StreamingCopyUnfenced(to, src.data() + src_off, n);
    StreamingFence();
  }
  EXPECT_TRUE(std::equal(to, to + n, src.begin() + src_off))
      << "n=" << n << " src_off=" << src_off << " dst_off=" << dst_off;
  for (size_t i = 0; i < kPad + dst_off; ++i) {
    EXPECT_EQ(dst[i], kGuard) << "byte " << i << " before the destination, n=" << n;
  }
  for (size_t i = kPad + dst_off + n; i < dst.size(); ++i) {
    EXPECT_EQ(dst[i], kGuard) << "byte " << i << " after the destination, n=" << n;
  }
}

TEST(StreamingCopyTest, CopiesEveryByteAndNothingAround) {
  const size_t sizes[] = {
      0, 1, 15, 63, 64, 65, 255, 256 * 1024 - 1, 256 * 1024 + 77, (4u << 20) + 13};
  for (bool fenced : {true, false}) {
    for (size_t n : sizes) {
      for (size_t src_off : {0, 3}) {
        for (size_t dst_off : {0, 1, 15, 16, 17, 63}) CheckCopy(n, src_off, dst_off, fenced);
      }
    }
  }
}

// CopyBytes picks its loop by where the destination falls relative to the source within a
// page, so both sit at chosen offsets of page-aligned buffers.
TEST(CopyBytesTest, CopiesEveryByteAndNothingAroundAtEveryPageDistance) {
  constexpr size_t kPage = 4096, kMax = 128 * 1024 + 77;
  // aligned_alloc takes a whole number of alignments.
  constexpr size_t kSrcBytes = 35 * kPage, kDstBytes = 37 * kPage;
  static_assert(kSrcBytes >= kMax + 2 * kPage && kDstBytes >= kMax + 4 * kPage);
  const std::vector<uint8_t> pattern = Pattern(kMax);
  auto* src = static_cast<uint8_t*>(std::aligned_alloc(kPage, kSrcBytes));
  auto* dst = static_cast<uint8_t*>(std::aligned_alloc(kPage, kDstBytes));
  ASSERT_NE(src, nullptr);
  ASSERT_NE(dst, nullptr);
  for (size_t n :
       {size_t{0}, size_t{1}, size_t{63}, size_t{2047}, size_t{2048}, size_t{2113}, kMax}) {
    for (size_t src_off : {0, 5}) {
      for (size_t distance : {0, 1, 16, 17, 63, 64, 4095}) {
        std::copy(pattern.begin(), pattern.begin() + n, src + src_off);
        const size_t dst_off = kPage + src_off + distance;  // kPage guard bytes before
        std::fill(dst, dst + kDstBytes, kGuard);
        CopyBytes(dst + dst_off, src + src_off, n);
        EXPECT_TRUE(std::equal(dst + dst_off, dst + dst_off + n, pattern.begin()))
            << "n=" << n << " src_off=" << src_off << " distance=" << distance;
        EXPECT_TRUE(std::all_of(dst, dst + dst_off, [](uint8_t b) { return b == kGuard; }))
            << "a byte before the destination changed, n=" << n << " distance=" << distance;
        EXPECT_TRUE(
            std::all_of(dst + dst_off + n, dst + kDstBytes, [](uint8_t b) { return b == kGuard; }))
            << "a byte after the destination changed, n=" << n << " distance=" << distance;
      }
    }
  }
  std::free(src);
  std::free(dst);
}

}  // namespace
}  // namespace kvstash
