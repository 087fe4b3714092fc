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

TEST(UriTest, ParsesUnixSocket) {
  auto u = ParseUri("unix:///run/kvstash/kvstash.sock");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, UriScheme::kGrpc);
  EXPECT_EQ(u->socket_path, "/run/kvstash/kvstash.sock");
  EXPECT_EQ(u->GrpcTarget(), "unix:/run/kvstash/kvstash.sock");
  EXPECT_FALSE(u->tls);
  u = ParseUri("grpc://127.0.0.1:7070");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->GrpcTarget(), "127.0.0.1:7070");
}

TEST(UriTest, RejectsMalformedUnixSocket) {
  const std::string bad[] = {"unix://", "unix://run/kvstash.sock", "unix:/run/kvstash.sock",
                             "unix:///run/kvstash.sock?x=1", "unix:///" + std::string(107, 'a')};
  for (const std::string& uri : bad) {
    auto u = ParseUri(uri);
    EXPECT_TRUE(absl::IsInvalidArgument(u.status())) << "\"" << uri << "\" -> " << u.status();
    EXPECT_NE(u.status().message().find("unix:///PATH"), absl::string_view::npos) << u.status();
  }
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

namespace kvstash::client_internal {
namespace {

TEST(ClusterUriTest, ParsesEtcd) {
  ASSERT_TRUE(IsClusterUri("etcd://127.0.0.1:2379/default"));
  auto u = ParseClusterUri("etcd://127.0.0.1:2379,etcd-1.example:2379,[::1]:2380/prod.a-1");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, ClusterScheme::kEtcd);
  EXPECT_EQ(u->addresses,
            (std::vector<std::string>{"127.0.0.1:2379", "etcd-1.example:2379", "[::1]:2380"}));
  EXPECT_EQ(u->name, "prod.a-1");
  EXPECT_FALSE(u->tls);
  ASSERT_TRUE(IsClusterUri("etcds://e1:2379/prod"));
  u = ParseClusterUri("etcds://e1:2379/prod");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, ClusterScheme::kEtcd);
  EXPECT_TRUE(u->tls);
  EXPECT_FALSE(ParseClusterUri("etcds://e1:2379").ok());
}

TEST(ClusterUriTest, ParsesStaticAndDns) {
  auto u = ParseClusterUri("static://10.0.0.1:7070,10.0.0.2:7070");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, ClusterScheme::kStatic);
  EXPECT_EQ(u->addresses, (std::vector<std::string>{"10.0.0.1:7070", "10.0.0.2:7070"}));
  u = ParseClusterUri("static://node:7070");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->addresses.size(), 1u);

  u = ParseClusterUri("dns://kvstash.default.svc.cluster.local:7070");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->scheme, ClusterScheme::kDns);
  EXPECT_EQ(u->host, "kvstash.default.svc.cluster.local");
  EXPECT_EQ(u->port, 7070);
}

TEST(ClusterUriTest, TellsClusterFromDaemonUris) {
  EXPECT_TRUE(IsClusterUri("static://"));
  EXPECT_TRUE(IsClusterUri("dns://x"));
  EXPECT_FALSE(IsClusterUri("grpc://127.0.0.1:7070"));
  EXPECT_FALSE(IsClusterUri("ucx://127.0.0.1:7070"));
  EXPECT_FALSE(IsClusterUri("etcd:/x"));
}

TEST(ClusterUriTest, RejectsMalformedWithTheReason) {
  const std::pair<const char*, const char*> bad[] = {
      {"etcd://127.0.0.1:2379", "NAME"},
      {"etcd://127.0.0.1:2379/", "name"},
      {"etcd://127.0.0.1:2379/a/b", "name"},
      {"etcd://127.0.0.1:2379/bad name", "name"},
      {"etcd:///default", "no HOST:PORT"},
      {"etcd://127.0.0.1:2379,,h:1/default", "empty entry"},
      {"etcd://127.0.0.1/default", "HOST:PORT"},
      {"static://", "no HOST:PORT"},
      {"static://a:1,", "empty entry"},
      {"static://a:1,a:1", "twice"},
      {"static://Node:1,node:1", "twice"},
      {"static://a:0", "1..65535"},
      {"static://a:1/x", "only HOST:PORT"},
      {"static://u@a:1", "user info"},
      {"dns://name", "HOST:PORT"},
      {"dns://a:1,b:1", "one NAME:PORT"},
      {"dns://name:7070/path", "only HOST:PORT"},
      {"dns://name:99999", "1..65535"},
      {"zk://a:1", "unknown scheme"},
  };
  for (const auto& [uri, why] : bad) {
    auto u = ParseClusterUri(uri);
    EXPECT_TRUE(absl::IsInvalidArgument(u.status())) << uri << " -> " << u.status();
    EXPECT_NE(u.status().message().find(why), absl::string_view::npos)
        << uri << " -> " << u.status();
    EXPECT_NE(u.status().message().find(uri), absl::string_view::npos) << u.status();
  }
}

}  // namespace
}  // namespace kvstash::client_internal
