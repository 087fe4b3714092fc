#include "client/cli/cluster_command.h"

#include <gtest/gtest.h>

#include <vector>

#include "absl/strings/match.h"

namespace kvstash::cli {
namespace {

TEST(ClusterTableTest, ListsEachMemberWithCapacityUsageAndState) {
  std::vector<ClusterRow> rows(2);
  rows[0].id = "node-1";
  rows[0].address = "10.0.0.1:7070";
  rows[0].zone = "rack-a";
  rows[0].tiers = {{ChunkTier::kDram, 4ull << 30}, {ChunkTier::kNvme, 64ull << 30}};
  rows[0].state = "connected calls=3 errors=0";
  rows[0].usage = ServerStats();
  rows[0].usage->tiers = {{ChunkTier::kDram, /*capacity_bytes=*/0, /*used_bytes=*/1ull << 30},
                          {ChunkTier::kNvme, /*capacity_bytes=*/0, /*used_bytes=*/2ull << 30}};
  rows[0].usage->chunks = 42;
  rows[1].id = "node-2";
  rows[1].address = "10.0.0.2:7070";
  rows[1].tiers = {{ChunkTier::kDram, 4ull << 30}};
  rows[1].state = "breaker-open calls=9 errors=9";
  rows[1].usage_error = "UNAVAILABLE: connection refused";
  const std::string table = ClusterTable(rows);
  EXPECT_TRUE(absl::StrContains(table, "member")) << table;
  EXPECT_TRUE(absl::StrContains(table, "dram used/capacity")) << table;
  EXPECT_TRUE(absl::StrContains(table, "nvme used/capacity")) << table;
  EXPECT_TRUE(absl::StrContains(table, "node-1")) << table;
  EXPECT_TRUE(absl::StrContains(table, "10.0.0.1:7070")) << table;
  EXPECT_TRUE(absl::StrContains(table, "rack-a")) << table;
  EXPECT_TRUE(absl::StrContains(table, "1.0 GiB / 4.0 GiB")) << table;
  EXPECT_TRUE(absl::StrContains(table, "2.0 GiB / 64.0 GiB")) << table;
  EXPECT_TRUE(absl::StrContains(table, " 42 ")) << table;
  EXPECT_TRUE(absl::StrContains(table, "connected calls=3 errors=0")) << table;
  // A member that did not answer: its capacity from the member set, no usage, the reason.
  EXPECT_TRUE(absl::StrContains(table, "- / 4.0 GiB")) << table;
  EXPECT_TRUE(absl::StrContains(table, "node-2: stats: UNAVAILABLE: connection refused")) << table;
  EXPECT_TRUE(absl::StrContains(table, "2 members")) << table;
}

}  // namespace
}  // namespace kvstash::cli
