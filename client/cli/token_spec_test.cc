#include "client/cli/token_spec.h"

#include <gtest/gtest.h>

namespace kvstash::cli {
namespace {

using ::testing::Test;

TEST(TokenSpecTest, SingleRangeIsInclusive) {
  auto t = ParseTokenSpec("0-1023");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 1024u);
  EXPECT_EQ(t->front(), 0);
  EXPECT_EQ(t->back(), 1023);
}

TEST(TokenSpecTest, MixedListKeepsOrderAndRepeats) {
  auto t = ParseTokenSpec("1,2,3,10-12, 7 ,3");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, (std::vector<int32_t>{1, 2, 3, 10, 11, 12, 7, 3}));
}

TEST(TokenSpecTest, ExtremesAndSingletonRange) {
  auto t = ParseTokenSpec("2147483647,5-5");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, (std::vector<int32_t>{2147483647, 5}));
}

TEST(TokenSpecTest, RejectsMalformed) {
  const char* bad[] = {"",
                       " ",
                       ",",
                       "1,,2",
                       "1,",
                       "a",
                       "-5",
                       "5-",
                       "9-3",
                       "1-2-3",
                       "2147483648",
                       "+4",
                       "0x10",
                       "1.5",
                       "0-99999999999",
                       "0-2000000000"};
  for (const char* spec : bad) {
    auto t = ParseTokenSpec(spec);
    EXPECT_TRUE(absl::IsInvalidArgument(t.status())) << "\"" << spec << "\"";
  }
}

TEST(TokenSpecTest, ErrorNamesTheItem) {
  auto t = ParseTokenSpec("1,2,x7,4");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("x7"), absl::string_view::npos) << t.status();
}

}  // namespace
}  // namespace kvstash::cli
