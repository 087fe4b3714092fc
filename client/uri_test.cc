#include "client/uri.h"

#include <gtest/gtest.h>

namespace kvstash::client_internal {
namespace {

TEST(UriTest, ParsesGrpcAndUcx) {
  auto u = ParseUri("grpc://127.0.0.1:7070");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, UriScheme::kGrpc);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 7070);
  EXPECT_EQ(u->HostPort(), "127.0.0.1:7070");
  EXPECT_FALSE(u->tls);

  u = ParseUri("grpcs://cache.example:7070");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, UriScheme::kGrpc);
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->HostPort(), "cache.example:7070");

  u = ParseUri("ucx://node-7.cluster.local:13337");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, UriScheme::kUcx);
  EXPECT_EQ(u->host, "node-7.cluster.local");
  EXPECT_EQ(u->port, 13337);
}

TEST(UriTest, ParsesBracketedIpv6) {
  auto u = ParseUri("grpc://[::1]:7070");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->HostPort(), "[::1]:7070");
}

TEST(UriTest, RejectsMalformed) {
  const char* bad[] = {"",
                       "127.0.0.1:7070",
                       "grpc:/127.0.0.1:7070",
                       "grpc://127.0.0.1",
                       "grpc://127.0.0.1:",
                       "grpc://:7070",
                       "grpc://127.0.0.1:0",
                       "grpc://127.0.0.1:65536",
                       "grpc://127.0.0.1:70x",
                       "grpc://127.0.0.1:+70",
                       "grpc://127.0.0.1:7070/path",
                       "grpc://user@127.0.0.1:7070",
                       "grpc://::1:7070",
                       "grpc://[::1]7070",
                       "grpc://[]:7070",
                       "grpc://host name:7070"};
  for (const char* uri : bad) {
    auto u = ParseUri(uri);
    EXPECT_TRUE(absl::IsInvalidArgument(u.status())) << "\"" << uri << "\" -> " << u.status();
  }
}

TEST(UriTest, UnknownSchemeIsNamed) {
  auto u = ParseUri("http://127.0.0.1:7070");
  ASSERT_TRUE(absl::IsInvalidArgument(u.status()));
  EXPECT_NE(u.status().message().find("\"http\""), absl::string_view::npos) << u.status();
  EXPECT_NE(u.status().message().find("http://127.0.0.1:7070"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvstash::client_internal
