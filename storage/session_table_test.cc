#include "storage/session_table.h"

#include "gtest/gtest.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::MakeKey;

const absl::Time kT0 = absl::FromUnixSeconds(1000);

SessionKey Session(uint64_t id, uint64_t ns = 1) { return {MakeKey(ns), id}; }

TEST(SessionTableTest, IdleSessionsEndInOrderOfLastActivity) {
  SessionTable table(absl::Seconds(10), 100);
  EXPECT_TRUE(table.Touch(Session(1), kT0).empty());
  EXPECT_TRUE(table.Touch(Session(2), kT0 + absl::Seconds(5)).empty());
  EXPECT_TRUE(table.Touch(Session(1), kT0 + absl::Seconds(8)).empty());  // active again
  EXPECT_EQ(table.CountsByNamespace(kT0 + absl::Seconds(9))[MakeKey(1)], 2u);
  const std::vector<SessionKey> idle = table.TakeIdle(kT0 + absl::Seconds(16));
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0], Session(2));
  EXPECT_EQ(table.CountsByNamespace(kT0 + absl::Seconds(16))[MakeKey(1)], 1u);
  // A touch also ends what idled out meanwhile.
  const std::vector<SessionKey> ended = table.Touch(Session(3), kT0 + absl::Seconds(30));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0], Session(1));
}

TEST(SessionTableTest, PastTheCapTheSessionIdleLongestEnds) {
  SessionTable table(absl::Hours(1), 2);
  table.Touch(Session(1), kT0);
  table.Touch(Session(2), kT0 + absl::Seconds(1));
  table.Touch(Session(1), kT0 + absl::Seconds(2));
  const std::vector<SessionKey> ended = table.Touch(Session(3), kT0 + absl::Seconds(3));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0], Session(2));
  EXPECT_EQ(table.CountsByNamespace(kT0 + absl::Seconds(3))[MakeKey(1)], 2u);
}

TEST(SessionTableTest, EndAndNamespacesAreSeparate) {
  SessionTable table(absl::Hours(1), 10);
  table.Touch(Session(1, 1), kT0);
  table.Touch(Session(1, 2), kT0);
  EXPECT_TRUE(table.End(Session(1, 1)));
  EXPECT_FALSE(table.End(Session(1, 1)));
  auto counts = table.CountsByNamespace(kT0);
  EXPECT_EQ(counts.count(MakeKey(1)), 0u);
  EXPECT_EQ(counts[MakeKey(2)], 1u);
}

}  // namespace
}  // namespace kvstash::storage
