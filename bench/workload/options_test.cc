#include "bench/workload/options.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kvstash::bench::workload {
namespace {

absl::StatusOr<WorkloadOptions> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "kvstash_workload");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseWorkloadOptions(static_cast<int>(argv.size()), argv.data(), "kvstashd");
}

TEST(WorkloadOptionsTest, DefaultsAndShortForm) {
  absl::StatusOr<WorkloadOptions> full = Parse({});
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->model.name, "llama3-8b");
  EXPECT_EQ(full->chunk_tokens, 256u);
  EXPECT_EQ(full->workloads.size(), 6u);
  EXPECT_EQ(full->stores.size(), 5u);
  absl::StatusOr<WorkloadOptions> quick = Parse({"--short", "--chunk_tokens", "32"});
  ASSERT_TRUE(quick.ok()) << quick.status();
  EXPECT_EQ(quick->model.name, "tiny");
  EXPECT_EQ(quick->chunk_tokens, 32u);  // explicit flags win
  EXPECT_EQ(quick->trace.chunk_tokens, 32u);
  EXPECT_TRUE(quick->trace.short_form);
}

TEST(WorkloadOptionsTest, ListsStoresHintsAndScale) {
  absl::StatusOr<WorkloadOptions> o =
      Parse({"--store=none,kvstash-nvme-ucx,redis", "--hints", "none,session+ttl,all",
             "--byte_scale", "1/16", "--capacity_fraction", "0.1,0.5", "--kvstash_set", "a.b=1",
             "--kvstash_set", "c.d=2", "--policies", "lru,chain", "--advisor", "off,on"});
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_EQ(o->stores.size(), 3u);
  EXPECT_TRUE(o->stores[1].nvme && o->stores[1].ucx);
  EXPECT_EQ(o->stores[2].kind, StoreSpec::Kind::kRedis);
  ASSERT_EQ(o->hint_sets.size(), 3u);
  EXPECT_EQ(o->hint_sets[1].Name(), "session+ttl");
  EXPECT_EQ(o->hint_sets[2].Name(), "session+parent+ttl");
  EXPECT_DOUBLE_EQ(o->byte_scale, 1.0 / 16);
  EXPECT_EQ(o->capacity_fractions, (std::vector<double>{0.1, 0.5}));
  EXPECT_EQ(o->kvstash_sets, (std::vector<std::string>{"a.b=1", "c.d=2"}));
  EXPECT_EQ(o->policies, (std::vector<std::string>{"lru", "chain"}));
  EXPECT_EQ(o->advisor, (std::vector<bool>{false, true}));
  EXPECT_EQ(Parse({})->advisor, (std::vector<bool>{true}));
}

TEST(WorkloadOptionsTest, CostFlagsOverrideTheModel) {
  absl::StatusOr<WorkloadOptions> o =
      Parse({"--prefill_tokens_per_s", "1000", "--decode_tokens_per_s", "7", "--model", "tiny"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->cost.prefill.tokens_per_s, 1000);
  EXPECT_EQ(o->cost.decode_tokens_per_s, 7);
  EXPECT_EQ(o->chunk_tokens, 16u);
}

TEST(WorkloadOptionsTest, BadValuesNameTheFlag) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--store", "kvstash-gpu"},
                                             {"--hints", "pin"},
                                             {"--advisor", "maybe"},
                                             {"--advisor", ""},
                                             {"--byte_scale", "2"},
                                             {"--capacity_fraction", "0"},
                                             {"--workloads", "poetry"},
                                             {"--model", "gpt-9"},
                                             {"--kvstash_set", "novalue"},
                                             {"--calibration", "/nonexistent.json"},
                                             {"--store", ""}}) {
    absl::StatusOr<WorkloadOptions> o = Parse(args);
    ASSERT_FALSE(o.ok()) << args[0];
    EXPECT_TRUE(absl::IsInvalidArgument(o.status())) << o.status();
    EXPECT_NE(o.status().message().find(args[0].substr(2)), std::string::npos) << o.status();
  }
}

}  // namespace
}  // namespace kvstash::bench::workload
