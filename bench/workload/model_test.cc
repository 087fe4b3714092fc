#include "bench/workload/model.h"

#include "gtest/gtest.h"

namespace kvstash::bench::workload {
namespace {

TEST(ModelTest, KnownShapes) {
  EXPECT_EQ(ModelByName("llama3-8b")->kv_bytes_per_token, 128u << 10);
  EXPECT_EQ(ModelByName("llama2-7b")->kv_bytes_per_token, 512u << 10);
  EXPECT_EQ(ModelByName("tiny")->kv_bytes_per_token, 4u << 10);
  EXPECT_TRUE(absl::IsNotFound(ModelByName("gpt-9").status()));
}

TEST(ModelTest, PrefillGrowsWithContext) {
  const CostModel c{{1000, 1e-6}, 10};
  EXPECT_DOUBLE_EQ(c.PrefillSeconds(100, 0), 0.1 + 1e-6 * 100 * 50.5);
  EXPECT_GT(c.PrefillSeconds(100, 10000), c.PrefillSeconds(100, 0));
  EXPECT_DOUBLE_EQ(c.DecodeSeconds(20), 2.0);
}

TEST(ModelTest, DefaultsFollowFlops) {
  const ModelShape m = *ModelByName("llama3-8b");
  const CostModel c = DefaultCost(m, GpuSpec{});
  // The client's PrefillModel defaults describe this model on this GPU.
  EXPECT_DOUBLE_EQ(c.prefill.tokens_per_s, PrefillModel{}.tokens_per_s);
  EXPECT_DOUBLE_EQ(c.prefill.attention_s_per_token2, PrefillModel{}.attention_s_per_token2);
  EXPECT_TRUE(c.Validate().ok());
  // Twice the GPU halves both terms; a model of 4x the layers x width attends 4x as slowly.
  const CostModel fast = DefaultCost(m, GpuSpec{2 * 989});
  EXPECT_DOUBLE_EQ(fast.prefill.tokens_per_s, 2 * c.prefill.tokens_per_s);
  ModelShape wide = m;
  wide.layers *= 4;
  EXPECT_NEAR(DefaultCost(wide, GpuSpec{}).prefill.attention_s_per_token2,
              4 * c.prefill.attention_s_per_token2, 1e-20);
}

TEST(ModelTest, CalibrationOverridesNamedFields) {
  CostModel c{{1000, 0}, 10};
  ASSERT_TRUE(ApplyCalibration(R"({"prefill_tokens_per_s": 5000, "decode_tokens_per_s": 42})",
                               "cal.json", &c)
                  .ok());
  EXPECT_EQ(c.prefill.tokens_per_s, 5000);
  EXPECT_EQ(c.decode_tokens_per_s, 42);
  absl::Status bad = ApplyCalibration(R"({"warp_speed": 9})", "cal.json", &c);
  EXPECT_TRUE(absl::IsInvalidArgument(bad));
  EXPECT_NE(bad.message().find("cal.json"), std::string::npos);
  EXPECT_FALSE(ApplyCalibration("[1, 2]", "cal.json", &c).ok());
  EXPECT_FALSE(ApplyCalibration(R"({"prefill_tokens_per_s": -1})", "cal.json", &c).ok());
}

}  // namespace
}  // namespace kvstash::bench::workload
