#include "common/streaming_copy.h"

#include <algorithm>
#include <cstdint>
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

}  // namespace
}  // namespace kvstash
