#include "storage/lease_table.h"

#include "gtest/gtest.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::MakeId;

const absl::Time kT0 = absl::FromUnixSeconds(1000);

std::vector<LeaseTable::Hold> Holds(std::initializer_list<int> keys) {
  std::vector<LeaseTable::Hold> holds;
  for (int k : keys) holds.push_back({MakeId(k), static_cast<uint64_t>(100 + k)});
  return holds;
}

TEST(LeaseTableTest, IdsAreUniqueAndNonZero) {
  LeaseTable t;
  const uint64_t a = t.Add(kT0, Holds({1}));
  const uint64_t b = t.Add(kT0, Holds({1}));
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.active_leases(), 2u);
}

TEST(LeaseTableTest, ReleaseReturnsEachHoldOnce) {
  LeaseTable t;
  const uint64_t id = t.Add(kT0 + absl::Seconds(5), Holds({1, 2}));
  auto hold = t.Release(id, MakeId(2));
  ASSERT_TRUE(hold.has_value());
  EXPECT_EQ(hold->id, MakeId(2));
  EXPECT_EQ(hold->generation, 102u);
  EXPECT_FALSE(t.Release(id, MakeId(2)).has_value());
  EXPECT_FALSE(t.Release(id, MakeId(3)).has_value());
  EXPECT_FALSE(t.Release(id + 1, MakeId(1)).has_value());
  EXPECT_TRUE(t.Release(id, MakeId(1)).has_value());
  EXPECT_EQ(t.active_leases(), 0u);  // fully released leases disappear
}

TEST(LeaseTableTest, ExpiryReturnsOnlyUnreleasedHoldsOfDueLeases) {
  LeaseTable t;
  const uint64_t early = t.Add(kT0 + absl::Seconds(1), Holds({1, 2, 3}));
  t.Add(kT0 + absl::Seconds(10), Holds({4}));
  ASSERT_TRUE(t.Release(early, MakeId(2)).has_value());
  EXPECT_TRUE(t.TakeExpired(kT0).empty());
  std::vector<LeaseTable::Hold> expired = t.TakeExpired(kT0 + absl::Seconds(1));
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_TRUE((expired[0].id == MakeId(1) && expired[1].id == MakeId(3)) ||
              (expired[0].id == MakeId(3) && expired[1].id == MakeId(1)));
  EXPECT_FALSE(t.Release(early, MakeId(1)).has_value());  // gone with its lease
  EXPECT_TRUE(t.TakeExpired(kT0 + absl::Seconds(2)).empty());
  EXPECT_EQ(t.TakeExpired(kT0 + absl::Seconds(11)).size(), 1u);
  EXPECT_EQ(t.active_leases(), 0u);
}

TEST(LeaseTableTest, DuplicateKeysAreHeldAndReleasedSeparately) {
  LeaseTable t;
  const uint64_t id = t.Add(kT0, Holds({7, 7}));
  EXPECT_TRUE(t.Release(id, MakeId(7)).has_value());
  EXPECT_TRUE(t.Release(id, MakeId(7)).has_value());
  EXPECT_FALSE(t.Release(id, MakeId(7)).has_value());
}

}  // namespace
}  // namespace kvstash::storage
