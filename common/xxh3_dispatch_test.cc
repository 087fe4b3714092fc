// The run-time dispatched XXH3 (common/xxh3_dispatch.h) must give the values of the
// library's baseline build: stored checksums and chunk keys depend on it.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#if defined(__x86_64__) || defined(__i386__)
#define XXH_DISPATCH_DISABLE_REPLACE  // both variants side by side in this file
#include <xxh_x86dispatch.h>

#include <cstdint>
#include <random>
#include <vector>

#include "common/random_bytes.h"
#include "gtest/gtest.h"

namespace kvstash {
namespace {

TEST(Xxh3DispatchTest, KnownValue) {
  EXPECT_EQ(XXH3_64bits_dispatch("", 0), 0x2D06800538D394C2ull);
}

TEST(Xxh3DispatchTest, OneShotMatchesBaselineAtEverySizeAndAlignment) {
  const std::vector<uint8_t> data = RandomBytes((5 << 20) + 64, 1);
  std::mt19937 rng(2);
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 600; ++n) sizes.push_back(n);  // every short-input branch
  for (int i = 0; i < 40; ++i) sizes.push_back(rng() % (5 << 20));
  sizes.push_back(4 << 20);
  for (size_t n : sizes) {
    const uint8_t* p = data.data() + rng() % 64;
    ASSERT_EQ(XXH3_64bits_dispatch(p, n), XXH3_64bits(p, n)) << n;
    const XXH128_hash_t fast = XXH3_128bits_dispatch(p, n);
    const XXH128_hash_t base = XXH3_128bits(p, n);
    ASSERT_TRUE(XXH128_isEqual(fast, base)) << n;
  }
}

TEST(Xxh3DispatchTest, StreamingInRandomPiecesMatchesOneShot) {
  const std::vector<uint8_t> data = RandomBytes(9 << 20, 3);
  std::mt19937 rng(4);
  for (int round = 0; round < 8; ++round) {
    const size_t n = rng() % data.size();
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    for (size_t done = 0; done < n;) {
      const size_t step = std::min<size_t>(n - done, 1 + rng() % (1 << 20));
      ASSERT_EQ(XXH3_64bits_update_dispatch(&state, data.data() + done, step), XXH_OK);
      done += step;
    }
    EXPECT_EQ(XXH3_64bits_digest(&state), XXH3_64bits(data.data(), n)) << n;
  }
}

}  // namespace
}  // namespace kvstash
#endif  // x86
