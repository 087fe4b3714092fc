// The security keys of the config: server.tls.*, metrics.bearer_token_file and the UCX
// trust rule (docs/security.md).
#include <string>
#include <tuple>

#include "gtest/gtest.h"
#include "server/config.h"
#include "server/config_file.h"

namespace kvstash::server {
namespace {

TEST(ConfigSecurityTest, ReadsTheTlsAndMetricsTokenKeys) {
  absl::StatusOr<ServerConfig> c = ParseConfig(R"(
server:
  tls: { cert_file: /etc/k/tls.crt, key_file: /etc/k/tls.key, client_ca_file: /etc/k/ca.crt,
         reload_interval_ms: 2000 }
metrics: { bearer_token_file: /etc/k/metrics-token }
ucx: { trusted_network: true })",
                                               {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->server.tls.enabled());
  EXPECT_EQ(c->server.tls.cert_file, "/etc/k/tls.crt");
  EXPECT_EQ(c->server.tls.key_file, "/etc/k/tls.key");
  EXPECT_EQ(c->server.tls.client_ca_file, "/etc/k/ca.crt");
  EXPECT_EQ(c->server.tls.reload_interval_ms, 2000);
  EXPECT_EQ(c->metrics.bearer_token_file, "/etc/k/metrics-token");
  EXPECT_TRUE(c->ucx.trusted_network);
  absl::StatusOr<ServerConfig> again = ParseConfig(EmitConfig(*c), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(EmitConfig(*again), EmitConfig(*c));
  EXPECT_FALSE(ServerConfig().server.tls.enabled());
}

TEST(ConfigSecurityTest, RefusesIncompleteTlsSettings) {
  for (const auto& [sets, field] :
       {std::tuple<std::vector<ConfigOverride>, const char*>{{{"server.tls.cert_file", "c.pem"}},
                                                             "server.tls.cert_file: set without"},
        {{{"server.tls.key_file", "k.pem"}}, "server.tls.key_file: set without"},
        {{{"server.tls.client_ca_file", "ca.pem"}}, "server.tls.client_ca_file"},
        {{{"server.tls.reload_interval_ms", "10"}}, "server.tls.reload_interval_ms"}}) {
    absl::StatusOr<ServerConfig> bad = ParseConfig("", sets);
    ASSERT_FALSE(bad.ok()) << field;
    EXPECT_NE(bad.status().message().find(field), std::string::npos) << bad.status();
  }
  EXPECT_TRUE(ParseConfig("", {{"server.tls.cert_file", "c.pem"},
                               {"server.tls.key_file", "k.pem"},
                               {"server.tls.client_ca_file", "ca.pem"}})
                  .ok());
}

TEST(ConfigSecurityTest, UcxOnAnOpenNetworkNeedsTrustWhenAuthIsRequired) {
  UcxConfig ucx;
  ucx.listen = "0.0.0.0:7072";
  absl::Status refused = CheckUcxTrust(ucx, /*auth_required=*/true);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_NE(refused.message().find("UCX has no TLS"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("ucx.trusted_network"), std::string::npos) << refused;
  EXPECT_TRUE(CheckUcxTrust(ucx, /*auth_required=*/false).ok());
  ucx.trusted_network = true;
  EXPECT_TRUE(CheckUcxTrust(ucx, true).ok());
  ucx.trusted_network = false;
  ucx.enabled = false;
  EXPECT_TRUE(CheckUcxTrust(ucx, true).ok());
  ucx.enabled = true;
  for (const char* loopback : {"127.0.0.1:7072", "127.0.0.2:0", "localhost:7072", "[::1]:7072"}) {
    ucx.listen = loopback;
    EXPECT_TRUE(CheckUcxTrust(ucx, true).ok()) << loopback;
  }
  for (const char* open : {"10.0.0.5:7072", "[::]:7072", "node-1:7072", "128.0.0.1:1",
                           "127.example.com:7072", "0.0.0.0:7072"}) {
    EXPECT_FALSE(IsLoopbackHostPort(open)) << open;
  }
}

}  // namespace
}  // namespace kvstash::server
