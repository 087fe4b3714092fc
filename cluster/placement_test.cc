#include "cluster/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace kvstash::cluster {
namespace {

constexpr int kKeys = 100000;

// Key i: two splitmix64 outputs, as unrelated as real chunk keys.
Key128 TestKey(uint64_t i) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  const uint64_t halves[2] = {mix(2 * i), mix(2 * i + 1)};
  Key128 key;
  std::memcpy(key.data(), halves, sizeof(halves));
  return key;
}

std::vector<Member> Members(int n) {
  std::vector<Member> out;
  for (int i = 0; i < n; ++i) {
    Member m;
    m.id = absl::StrCat("node-", i);
    m.grpc_address = absl::StrCat("127.0.0.1:", 7000 + i);
    out.push_back(m);
  }
  return out;
}

const std::string& OwnerId(const Placement& p, const Key128& key) {
  return p.members()[p.Owner(key)].id;
}

TEST(PlacementTest, DeterministicAndIndependentOfMemberOrder) {
  std::vector<Member> members = Members(5);
  Placement a(members);
  std::reverse(members.begin(), members.end());
  std::swap(members[1], members[3]);
  Placement b(members);
  Placement c(Members(5));
  for (int i = 0; i < 10000; ++i) {
    const Key128 key = TestKey(i);
    EXPECT_EQ(OwnerId(a, key), OwnerId(b, key));
    EXPECT_EQ(OwnerId(a, key), OwnerId(c, key));
    EXPECT_EQ(a.Owners(key, 3), b.Owners(key, 3));
  }
}

TEST(PlacementTest, SortsByIdAndFindsMembers) {
  std::vector<Member> members = Members(3);
  std::swap(members[0], members[2]);
  members.push_back(members[1]);  // a duplicate id
  members.back().zone = "later";
  Placement p(members);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p.members()[0].id, "node-0");
  EXPECT_EQ(p.members()[2].id, "node-2");
  EXPECT_EQ(p.members()[1].zone, "later");  // the last of a duplicated id wins
  EXPECT_EQ(p.IndexOf("node-1"), 1);
  EXPECT_EQ(p.IndexOf("node-9"), -1);
  EXPECT_TRUE(Placement({}).empty());
}

TEST(PlacementTest, OwnersAreDistinctBestFirst) {
  Placement p(Members(8));
  for (int i = 0; i < 10000; ++i) {
    const Key128 key = TestKey(i);
    OwnerList owners = p.Owners(key, 3);
    ASSERT_EQ(owners.size(), 3u);
    EXPECT_EQ(owners[0], p.Owner(key));
    absl::flat_hash_set<uint32_t> seen(owners.begin(), owners.end());
    EXPECT_EQ(seen.size(), 3u);
    for (size_t j = 1; j < owners.size(); ++j) {
      EXPECT_GE(Placement::Score(key, Placement::HashId(p.members()[owners[j - 1]].id)),
                Placement::Score(key, Placement::HashId(p.members()[owners[j]].id)));
    }
  }
  EXPECT_EQ(p.Owners(TestKey(1), 20).size(), 8u);  // capped at the member count
}

void ExpectBalanced(int n) {
  Placement p(Members(n));
  std::vector<int> counts(n, 0);
  for (int i = 0; i < kKeys; ++i) ++counts[p.Owner(TestKey(i))];
  const double expected = static_cast<double>(kKeys) / n;
  for (int i = 0; i < n; ++i) {
    EXPECT_NEAR(counts[i], expected, 0.04 * expected) << n << " members, member " << i;
  }
}

TEST(PlacementTest, BalancedOverThreeMembers) { ExpectBalanced(3); }
TEST(PlacementTest, BalancedOverEightMembers) { ExpectBalanced(8); }

TEST(PlacementTest, JoiningMemberTakesAboutAQuarterAndOnlyFromOthers) {
  Placement three(Members(3));
  Placement four(Members(4));
  int moved = 0;
  for (int i = 0; i < kKeys; ++i) {
    const Key128 key = TestKey(i);
    const std::string& before = OwnerId(three, key);
    const std::string& after = OwnerId(four, key);
    if (before != after) {
      ++moved;
      EXPECT_EQ(after, "node-3") << "a key moved between old members";
    }
  }
  EXPECT_NEAR(moved, kKeys / 4.0, 0.04 * kKeys / 4.0);
}

TEST(PlacementTest, LeavingMemberMovesOnlyItsKeys) {
  std::vector<Member> members = Members(4);
  Placement before(members);
  members.erase(members.begin() + 1);  // node-1 leaves
  Placement after(members);
  int moved = 0;
  for (int i = 0; i < kKeys; ++i) {
    const Key128 key = TestKey(i);
    const std::string& old_owner = OwnerId(before, key);
    if (old_owner == "node-1") {
      ++moved;
      // Its keys go to what was their second choice.
      EXPECT_EQ(OwnerId(after, key), before.members()[before.Owners(key, 2)[1]].id);
    } else {
      EXPECT_EQ(OwnerId(after, key), old_owner);
    }
  }
  EXPECT_NEAR(moved, kKeys / 4.0, 0.04 * kKeys / 4.0);
}

}  // namespace
}  // namespace kvstash::cluster
