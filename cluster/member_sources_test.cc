// Static and DNS member sources (no etcd needed).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "cluster/member_source.h"
#include "gtest/gtest.h"

namespace kvstash::cluster {
namespace {

std::vector<std::string> Ids(const std::vector<Member>& members) {
  std::vector<std::string> ids;
  for (const Member& m : members) ids.push_back(m.id);
  return ids;
}

TEST(StaticMemberSourceTest, DeliversTheListSortedOnce) {
  auto source = NewStaticMemberSource({"h2:7070", "10.0.0.1:7070", "[::1]:7071", "h2:7070"});
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_TRUE((*source)->Current().empty());
  std::vector<std::vector<Member>> seen;
  ASSERT_TRUE(
      (*source)
          ->Start([&](const std::vector<Member>& m) { seen.push_back(m); }, absl::Seconds(1))
          .ok());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(Ids(seen[0]), (std::vector<std::string>{"10.0.0.1:7070", "[::1]:7071", "h2:7070"}));
  EXPECT_EQ(seen[0][0].grpc_address, "10.0.0.1:7070");
  EXPECT_EQ(seen[0][0].ucx_address, "10.0.0.1:7070");
  EXPECT_EQ((*source)->Current(), seen[0]);
  EXPECT_EQ((*source)->stats().updates, 1u);
  EXPECT_TRUE((*source)->stats().connected);
  EXPECT_TRUE(absl::IsFailedPrecondition(
      (*source)->Start([](const std::vector<Member>&) {}, absl::Seconds(1))));
}

TEST(StaticMemberSourceTest, BadListIsInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(NewStaticMemberSource({}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(NewStaticMemberSource({"h:1", "nope"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(NewStaticMemberSource({"h:0"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(NewStaticMemberSource({""}).status()));
}

TEST(DnsMemberSourceTest, ResolvesLocalhost) {
  auto source = NewDnsMemberSource("localhost", 7070, absl::Milliseconds(50));
  ASSERT_TRUE(source.ok()) << source.status();
  std::vector<std::vector<Member>> seen;
  ASSERT_TRUE(
      (*source)
          ->Start([&](const std::vector<Member>& m) { seen.push_back(m); }, absl::Seconds(10))
          .ok());
  ASSERT_EQ(seen.size(), 1u);
  const std::vector<std::string> ids = Ids(seen[0]);
  // IPv4 only by default: localhost once, not once per family.
  EXPECT_EQ(ids, std::vector<std::string>{"127.0.0.1:7070"});
  // Re-resolved on its thread; the same answer is not delivered again.
  const absl::Time until = absl::Now() + absl::Seconds(60);
  while ((*source)->stats().lookups < 3 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_GE((*source)->stats().lookups, 3u);
  EXPECT_EQ((*source)->Current(), seen[0]);
  EXPECT_EQ((*source)->stats().updates, 1u);
  EXPECT_TRUE((*source)->stats().connected);
}

TEST(DnsMemberSourceTest, UnresolvableNameIsUnavailable) {
  auto source = NewDnsMemberSource("no-such-host.invalid", 7070, absl::Seconds(1));
  ASSERT_TRUE(source.ok()) << source.status();
  absl::Status started =
      (*source)->Start([](const std::vector<Member>&) {}, absl::Milliseconds(300));
  EXPECT_TRUE(absl::IsUnavailable(started)) << started;
  // A lookup that outlasts Start is still counted.
  const absl::Time until = absl::Now() + absl::Seconds(60);
  while ((*source)->stats().errors == 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_GT((*source)->stats().errors, 0u);
  EXPECT_GE((*source)->stats().lookups, (*source)->stats().errors);
  EXPECT_NE((*source)->stats().last_error.find("no-such-host.invalid"), std::string::npos);
  EXPECT_FALSE((*source)->stats().connected);
}

TEST(DnsMemberSourceTest, BadArgumentsAreInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(NewDnsMemberSource("", 7070, absl::Seconds(1)).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(NewDnsMemberSource("h", 0, absl::Seconds(1)).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(NewDnsMemberSource("h", 1, absl::ZeroDuration()).status()));
}

}  // namespace
}  // namespace kvstash::cluster
