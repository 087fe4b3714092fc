// EffectiveTcpSegmentBytes: the configured TCP segment, or UCX_TCP_RX_SEG_SIZE
// in UCX's memory units when the environment sets it.
#include <cstdlib>

#include "common/ucx_setup.h"
#include "gtest/gtest.h"

namespace kvstash::ucx_setup {
namespace {

class TcpSegmentTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("UCX_TCP_RX_SEG_SIZE"); }
};

TEST_F(TcpSegmentTest, ConfiguredValueWithoutTheEnvironment) {
  unsetenv("UCX_TCP_RX_SEG_SIZE");
  EXPECT_EQ(EffectiveTcpSegmentBytes(kDefaultTcpSegmentBytes).value_or(0), 256u << 10);
  EXPECT_EQ(EffectiveTcpSegmentBytes(1 << 20).value_or(0), 1u << 20);
  EXPECT_FALSE(EffectiveTcpSegmentBytes(1 << 10).ok());
  EXPECT_FALSE(EffectiveTcpSegmentBytes(uint64_t{1} << 30).ok());
}

TEST_F(TcpSegmentTest, EnvironmentWinsInUcxUnits) {
  for (const auto& [value, bytes] :
       std::initializer_list<std::pair<const char*, uint64_t>>{{"65536", 64 << 10},
                                                               {"256K", 256 << 10},
                                                               {"256k", 256 << 10},
                                                               {"256KB", 256 << 10},
                                                               {"1M", 1 << 20},
                                                               {"2mb", 2 << 20}}) {
    setenv("UCX_TCP_RX_SEG_SIZE", value, 1);
    absl::StatusOr<uint64_t> got = EffectiveTcpSegmentBytes(kDefaultTcpSegmentBytes);
    ASSERT_TRUE(got.ok()) << value << ": " << got.status();
    EXPECT_EQ(*got, bytes) << value;
  }
}

TEST_F(TcpSegmentTest, UnreadableOrOutOfRangeEnvironmentIsAnError) {
  for (const char* value : {"", "K", "64Q", "64KK", "-1", "1G", "4K", "12345678901234567890"}) {
    setenv("UCX_TCP_RX_SEG_SIZE", value, 1);
    absl::StatusOr<uint64_t> got = EffectiveTcpSegmentBytes(kDefaultTcpSegmentBytes);
    EXPECT_FALSE(got.ok()) << value;
    EXPECT_TRUE(absl::IsInvalidArgument(got.status())) << value;
    EXPECT_NE(got.status().message().find("UCX_TCP_RX_SEG_SIZE"), std::string::npos)
        << got.status();
  }
}

}  // namespace
}  // namespace kvstash::ucx_setup
