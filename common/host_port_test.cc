#include "common/host_port.h"

#include "gtest/gtest.h"

namespace kvstash {
namespace {

TEST(HostPortTest, SplitsNamesV4AndBracketedV6) {
  absl::string_view host, port;
  ASSERT_TRUE(SplitHostPort("example.com:7070", &host, &port));
  EXPECT_EQ(host, "example.com");
  EXPECT_EQ(port, "7070");
  ASSERT_TRUE(SplitHostPort("[::1]:7072", &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, "7072");
  ASSERT_TRUE(SplitHostPort(":7071", &host, &port));
  EXPECT_EQ(host, "");
  EXPECT_FALSE(SplitHostPort("no-port", &host, &port));
}

TEST(HostPortTest, WildcardsAndTheirLocalAddress) {
  for (absl::string_view h : {"", "0.0.0.0", "::", "[::]", "*"}) {
    EXPECT_TRUE(IsWildcardHost(h)) << h;
    EXPECT_EQ(LocalConnectHost(h), "127.0.0.1") << h;
  }
  for (absl::string_view h : {"127.0.0.1", "::1", "node-3"}) {
    EXPECT_FALSE(IsWildcardHost(h)) << h;
    EXPECT_EQ(LocalConnectHost(h), h);
  }
}

TEST(HostPortTest, ParseTakesDigitsOnlyForThePort) {
  ASSERT_TRUE(ParseHostPort("[::1]:7070").ok());
  EXPECT_EQ(ParseHostPort("[::1]:7070")->ToString(), "[::1]:7070");
  for (absl::string_view bad : {"h:7070 ", "h: 7070", "h:+80", "h:0", "h:65536", "::1:80", ":80"}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
}

TEST(HostPortTest, JoinBracketsV6Once) {
  EXPECT_EQ(JoinHostPort("10.0.0.3", 7072), "10.0.0.3:7072");
  EXPECT_EQ(JoinHostPort("::1", 7072), "[::1]:7072");
  EXPECT_EQ(JoinHostPort("[::1]", 7072), "[::1]:7072");
}

}  // namespace
}  // namespace kvstash
