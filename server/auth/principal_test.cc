#include "server/auth/principal.h"

#include <gtest/gtest.h>

namespace kvstash::server::auth {
namespace {

TEST(PrincipalTest, EachRightIsListedOnItsOwn) {
  Principal p;
  p.name = "engine-a";
  p.read = {"team-a", "public"};
  p.write = {"team-a"};
  EXPECT_TRUE(p.May(Access::kRead, "team-a"));
  EXPECT_TRUE(p.May(Access::kRead, "public"));
  EXPECT_TRUE(p.May(Access::kWrite, "team-a"));
  EXPECT_FALSE(p.May(Access::kWrite, "public"));
  EXPECT_FALSE(p.May(Access::kAdmin, "team-a"));  // write does not imply admin
  EXPECT_FALSE(p.May(Access::kRead, "team-b"));
  EXPECT_FALSE(p.MayAll(Access::kRead));
}

TEST(PrincipalTest, WriteDoesNotImplyRead) {
  Principal p;
  p.write = {"team-a"};
  p.admin = {"team-a"};
  EXPECT_FALSE(p.May(Access::kRead, "team-a"));
}

TEST(PrincipalTest, EmptyTenantIsTheDefaultTenant) {
  Principal p;
  p.read = {std::string(kDefaultTenant)};
  EXPECT_TRUE(p.May(Access::kRead, ""));
  EXPECT_TRUE(p.May(Access::kRead, kDefaultTenant));
  EXPECT_FALSE(p.May(Access::kWrite, ""));
}

TEST(PrincipalTest, AnyTenantCoversEveryTenant) {
  Principal p;
  p.admin = {std::string(kAnyTenant)};
  EXPECT_TRUE(p.May(Access::kAdmin, "team-a"));
  EXPECT_TRUE(p.May(Access::kAdmin, ""));
  EXPECT_TRUE(p.MayAll(Access::kAdmin));
  EXPECT_FALSE(p.MayAll(Access::kRead));
  EXPECT_FALSE(p.May(Access::kRead, "team-a"));
}

TEST(PrincipalTest, NoRightsMeansNothing) {
  const Principal p;
  for (Access a : {Access::kRead, Access::kWrite, Access::kAdmin}) {
    EXPECT_FALSE(p.May(a, "default"));
    EXPECT_FALSE(p.MayAll(a));
  }
}

TEST(PrincipalTest, OpenPrincipalMayDoEverything) {
  const PrincipalPtr open = OpenPrincipal();
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(open->name, kOpenPrincipal);
  EXPECT_TRUE(open->trusted);
  for (Access a : {Access::kRead, Access::kWrite, Access::kAdmin}) {
    EXPECT_TRUE(open->MayAll(a));
    EXPECT_TRUE(open->May(a, "any-tenant"));
  }
  EXPECT_EQ(open->limits.calls_per_s, 0);
  EXPECT_EQ(open->limits.bytes_per_s, 0);
  EXPECT_EQ(open->limits.max_concurrent_calls, 0u);
  EXPECT_EQ(OpenPrincipal(), open);  // one shared instance
}

}  // namespace
}  // namespace kvstash::server::auth
