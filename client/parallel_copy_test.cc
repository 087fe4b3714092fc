#include "client/parallel_copy.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/random_bytes.h"
#include "gtest/gtest.h"

namespace kvstash::client_internal {
namespace {

// Two helpers, a 64 KiB threshold and 16 KiB pieces: small copies exercise every edge.
ParallelCopier::Options TwoHelpersSmallPieces() {
  ParallelCopier::Options o;
  o.helpers = 2;
  o.min_bytes = 64 << 10;
  o.piece_bytes = 16 << 10;
  return o;
}

// Sizes around the piece and threshold edges, odd offsets on both sides, guard bytes
// around the destination; both store kinds.
TEST(ParallelCopierTest, CopiesEveryByteAndNothingElse) {
  ParallelCopier copier(TwoHelpersSmallPieces());
  const size_t sizes[] = {0, 1, (64 << 10) - 1, 64 << 10, (1 << 20) + 13, (4 << 20) + 4095};
  uint64_t seed = 1;
  for (bool streaming : {false, true}) {
    for (size_t n : sizes) {
      for (size_t offset : {0, 3}) {
        SCOPED_TRACE(testing::Message()
                     << "n " << n << " offset " << offset << " streaming " << streaming);
        const std::vector<uint8_t> src = RandomBytes(n + 8, seed++);
        std::vector<uint8_t> dst(n + 64, 0xA5);
        copier.CopyAll({{dst.data() + 32 + offset, src.data() + offset, n}}, streaming);
        EXPECT_TRUE(
            std::equal(src.begin() + offset, src.begin() + offset + n, dst.begin() + 32 + offset));
        for (size_t i = 0; i < 32 + offset; ++i) ASSERT_EQ(dst[i], 0xA5) << i;
        for (size_t i = 32 + offset + n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << i;
      }
    }
  }
}

// Several threads copy at once: one gets the helpers, the others copy alone; every copy
// is complete when CopyAll returns.
TEST(ParallelCopierTest, ConcurrentCopiesAreEachComplete) {
  ParallelCopier::Options o;
  o.min_bytes = 32 << 10;
  o.piece_bytes = 8 << 10;
  ParallelCopier copier(o);
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const size_t n = (256 << 10) + t * 1000 + i;
        const std::vector<uint8_t> src = RandomBytes(n, t * 1000 + i);
        std::vector<uint8_t> dst(n, 0);
        copier.CopyAll({{dst.data(), src.data(), n}}, i % 2 == 1);
        if (dst != src) ++bad[t];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

// A batch of ranges smaller than a piece, empty ones first, last and among them, each at its
// own place in one destination with guard bytes between: pieces that span ranges copy
// every part, shared with the helpers or not.
TEST(ParallelCopierTest, CopyAllCopiesEveryRangeAndNothingBetween) {
  ParallelCopier copier(TwoHelpersSmallPieces());
  ParallelCopier::Options alone_options = TwoHelpersSmallPieces();
  alone_options.min_bytes = size_t{1} << 30;
  ParallelCopier alone(alone_options);  // every batch below its threshold
  const size_t sizes[] = {0, 5000, 0, 16 << 10, 1, 40000, (16 << 10) + 1, 0, 12345, 30000, 0};
  for (bool streaming : {false, true}) {
    // 0: an empty batch; 1 and 4: about 117 KiB and 470 KiB, 8 and 30 pieces.
    for (int batches : {0, 1, 4}) {
      SCOPED_TRACE(testing::Message() << "batches " << batches << " streaming " << streaming);
      std::vector<std::vector<uint8_t>> srcs;
      std::vector<size_t> at;
      size_t total = 0;
      for (int b = 0; b < batches; ++b) {
        for (size_t n : sizes) {
          srcs.push_back(RandomBytes(n, srcs.size() + 1));
          at.push_back(total + 32);
          total += n + 32;
        }
      }
      std::vector<uint8_t> dst(total + 32, 0xA5);
      std::vector<ParallelCopier::Range> ranges;
      for (size_t i = 0; i < srcs.size(); ++i) {
        ranges.push_back({dst.data() + at[i] + (i % 3), srcs[i].data(), srcs[i].size()});
      }
      std::vector<uint8_t> want(dst.size(), 0xA5);
      for (size_t i = 0; i < srcs.size(); ++i) {
        std::copy(srcs[i].begin(), srcs[i].end(), want.begin() + at[i] + (i % 3));
      }
      for (ParallelCopier* c : {&copier, &alone}) {
        std::fill(dst.begin(), dst.end(), 0xA5);
        c->CopyAll(ranges, streaming);
        EXPECT_TRUE(dst == want) << (c == &alone ? "alone" : "shared");
      }
    }
  }
}

TEST(ParallelCopierTest, WithoutHelpersCopiesOnTheCaller) {
  ParallelCopier::Options o;
  o.helpers = 0;
  ParallelCopier copier(o);
  const std::vector<uint8_t> src = RandomBytes(3 << 20, 7);
  std::vector<uint8_t> dst(src.size());
  copier.CopyAll({{dst.data(), src.data(), src.size()}}, false);
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace kvstash::client_internal
