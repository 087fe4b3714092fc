#include "common/byte_size.h"

#include "common/bits.h"
#include "gtest/gtest.h"

namespace kvstash {
namespace {

TEST(ByteSizeTest, ParsesSuffixesInAnyCase) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("4KiB"), 4096u);
  EXPECT_EQ(*ParseByteSize("4 MiB"), 4u << 20);
  EXPECT_EQ(*ParseByteSize(" 3GiB "), 3ull << 30);
  EXPECT_EQ(*ParseByteSize("4gib"), 4ull << 30);
  EXPECT_EQ(*ParseByteSize("64mib"), 64u << 20);
  EXPECT_EQ(*ParseByteSize("2TiB"), 2ull << 40);
  EXPECT_EQ(*ParseByteSize("5KB"), 5000u);
  EXPECT_EQ(*ParseByteSize("5MB"), 5000000u);
  EXPECT_EQ(*ParseByteSize("5GB"), 5000000000u);
  EXPECT_EQ(*ParseByteSize("1TB"), 1000000000000u);
  EXPECT_EQ(*ParseByteSize("7B"), 7u);
  EXPECT_EQ(*ParseByteSize("0"), 0u);
}

TEST(ByteSizeTest, RejectsGarbage) {
  for (const char* bad : {"", "lots", "4XB", "-4KiB", "1.5GiB", "GiB", "4 GiB x", "4k", "+4"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseByteSize(bad).status())) << bad;
  }
  EXPECT_TRUE(absl::IsOutOfRange(ParseByteSize("20000000TiB").status()));
  EXPECT_TRUE(absl::IsOutOfRange(ParseByteSize("99999999999999999999").status()));
}

TEST(ByteSizeTest, FormatsWithTheLargestExactSuffixAndReadsItBack) {
  EXPECT_EQ(FormatByteSize(0), "0");
  EXPECT_EQ(FormatByteSize(100), "100");
  EXPECT_EQ(FormatByteSize(4096), "4KiB");
  EXPECT_EQ(FormatByteSize(1536ull << 20), "1536MiB");
  for (uint64_t v : {0ull, 100ull, 4096ull, 1536ull << 20, 3ull << 40}) {
    EXPECT_EQ(*ParseByteSize(FormatByteSize(v)), v);
  }
}

TEST(BitsTest, PowersOfTwo) {
  EXPECT_FALSE(IsPowerOfTwo(0));
  EXPECT_TRUE(IsPowerOfTwo(1));
  EXPECT_TRUE(IsPowerOfTwo(1ull << 63));
  EXPECT_FALSE(IsPowerOfTwo(12));
}

}  // namespace
}  // namespace kvstash
