#include "common/flags.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, flags_test_name, "default", "a string flag");
ABSL_FLAG(int, flags_test_count, 1, "an int flag");
ABSL_FLAG(bool, flags_test_switch, false, "a bool flag");

namespace kvstash {
namespace {

class FlagsTest : public ::testing::Test {
 protected:
  // Only this file's flags, reset to their defaults by every parse.
  static FlagParseOptions Options() {
    FlagParseOptions options;
    options.defined_in = "common/flags_test.cc";
    return options;
  }
};

TEST_F(FlagsTest, ValuesAfterEqualsOrAsTheNextArgument) {
  absl::StatusOr<ParsedFlags> parsed = ParseFlags(
      {"--flags_test_name=a", "--flags_test_count", "7", "--flags_test_switch"}, Options());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_name), "a");
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_count), 7);
  EXPECT_TRUE(absl::GetFlag(FLAGS_flags_test_switch));
  EXPECT_TRUE(parsed->Given("flags_test_count"));
  EXPECT_FALSE(parsed->help);
}

TEST_F(FlagsTest, RepeatedUsesKeepTheirOrder) {
  absl::StatusOr<ParsedFlags> parsed = ParseFlags(
      {"--flags_test_name", "b", "--flags_test_count=2", "--flags_test_name=a"}, Options());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Values("flags_test_name"), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_name), "a");
  EXPECT_FALSE(parsed->Given("flags_test_switch"));
}

TEST_F(FlagsTest, DashesReadAsUnderscores) {
  ASSERT_TRUE(ParseFlags({"--flags-test-count=3", "--flags-test-switch"}, Options()).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_count), 3);
  EXPECT_TRUE(absl::GetFlag(FLAGS_flags_test_switch));
}

TEST_F(FlagsTest, BoolsTakeAbslValuesButNeverTheNextArgument) {
  absl::StatusOr<ParsedFlags> parsed = ParseFlags({"--flags_test_switch", "false"}, Options());
  EXPECT_FALSE(parsed.ok());
  ASSERT_TRUE(ParseFlags({"--flags_test_switch=no"}, Options()).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_flags_test_switch));
}

TEST_F(FlagsTest, HelpStopsParsingAndVersionOnlyWhereAccepted) {
  absl::StatusOr<ParsedFlags> parsed = ParseFlags({"-h", "--bogus"}, Options());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->help);
  EXPECT_TRUE(ParseFlags({"--flags_test_count=2", "--help"}, Options())->help);
  EXPECT_FALSE(ParseFlags({"--version"}, Options()).ok());
  FlagParseOptions options = Options();
  options.version_flag = true;
  EXPECT_TRUE(ParseFlags({"--version"}, options)->version);
  EXPECT_FALSE(ParseFlags({"--help=1"}, options).ok());
}

TEST_F(FlagsTest, PositionalArgumentsOnlyWhereAllowed) {
  EXPECT_EQ(ParseFlags({"put"}, Options()).status().message(), "unexpected argument \"put\"");
  FlagParseOptions options = Options();
  options.allow_positional = true;
  absl::StatusOr<ParsedFlags> parsed = ParseFlags({"put", "--flags_test_count=4", "x"}, options);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->positional, (std::vector<std::string>{"put", "x"}));
  EXPECT_FALSE(ParseFlags({"--"}, options).ok());
}

TEST_F(FlagsTest, UsageErrorsNameTheFlag) {
  EXPECT_EQ(ParseFlags({"--bogus=1"}, Options()).status().message(), "unknown flag --bogus");
  EXPECT_EQ(ParseFlags({"--flags_test_name"}, Options()).status().message(),
            "flag --flags_test_name needs a value");
  absl::StatusOr<ParsedFlags> bad = ParseFlags({"--flags_test_count=many"}, Options());
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_NE(bad.status().message().find("--flags_test_count"), absl::string_view::npos);
}

TEST_F(FlagsTest, EachParseStartsFromTheDefaults) {
  ASSERT_TRUE(ParseFlags({"--flags_test_name=x", "--flags_test_switch"}, Options()).ok());
  ASSERT_TRUE(ParseFlags({}, Options()).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_flags_test_name), "default");
  EXPECT_FALSE(absl::GetFlag(FLAGS_flags_test_switch));
}

TEST_F(FlagsTest, FlagsOfOtherFilesAreUnknownWhenRestricted) {
  FlagParseOptions options;
  options.defined_in = "server/flags.cc";
  EXPECT_EQ(ParseFlags({"--flags_test_count=2"}, options).status().message(),
            "unknown flag --flags_test_count");
  options.defined_in = "common/flags_test.cc";
  EXPECT_TRUE(ParseFlags({"--flags_test_count=2"}, options).ok());
}

}  // namespace
}  // namespace kvstash
