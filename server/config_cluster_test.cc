// The `cluster:` keys of the config (docs/cluster.md): reading, defaults, --set, and the
// checks that name the field at fault.
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config.h"
#include "server/config_file.h"
#include "server/config_test_util.h"

namespace kvstash::server {
namespace {

using ::testing::HasSubstr;

TEST(ConfigClusterTest, DefaultsAreOffWithTheAgreedValues) {
  const ClusterConfig c = ServerConfig().cluster;
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.name, "default");
  EXPECT_EQ(c.etcd_endpoints, "");
  EXPECT_EQ(c.member_id, "");
  EXPECT_EQ(c.lease_ttl_s, 10);
  EXPECT_EQ(c.peer_probe_interval_ms, 5000);
  absl::StatusOr<ServerConfig> parsed = ParseConfig(DefaultConfigYaml(), {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->cluster.enabled);
}

TEST(ConfigClusterTest, ReadsEveryKeyAndEmitsThemBack) {
  absl::StatusOr<ServerConfig> c = ParseConfig(R"(
cluster:
  enabled: true
  name: prod-a
  etcd_endpoints: "10.0.0.1:2379,http://10.0.0.2:2379"
  member_id: node-7
  advertise_grpc: "10.1.0.7:7070"
  advertise_ucx: "10.1.0.7:7072"
  zone: rack-3
  lease_ttl_s: 2
  peer_probe_interval_ms: 0)",
                                               {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->cluster.enabled);
  EXPECT_EQ(c->cluster.name, "prod-a");
  EXPECT_EQ(c->cluster.etcd_endpoints, "10.0.0.1:2379,http://10.0.0.2:2379");
  EXPECT_EQ(c->cluster.member_id, "node-7");
  EXPECT_EQ(c->cluster.advertise_grpc, "10.1.0.7:7070");
  EXPECT_EQ(c->cluster.advertise_ucx, "10.1.0.7:7072");
  EXPECT_EQ(c->cluster.zone, "rack-3");
  EXPECT_EQ(c->cluster.lease_ttl_s, 2);
  EXPECT_EQ(c->cluster.peer_probe_interval_ms, 0);
  absl::StatusOr<ServerConfig> again = ParseConfig(EmitConfig(*c), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(EmitConfig(*again), EmitConfig(*c));
}

TEST(ConfigClusterTest, EtcdOverTlsFromHttpsEndpointsOrFiles) {
  absl::StatusOr<ServerConfig> c =
      ParseConfig("", {{"cluster.etcd_endpoints", "https://e1:2379,https://e2:2379", true},
                       {"cluster.peer_ca_file", "/etc/kvstash/peers-ca.crt", true},
                       {"server.tls.cert_file", "/etc/kvstash/tls.crt", true},
                       {"server.tls.key_file", "/etc/kvstash/tls.key", true}});
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<cluster::EtcdOptions> etcd = c->cluster.Etcd();
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  EXPECT_TRUE(etcd->tls);
  EXPECT_EQ(etcd->endpoints, (std::vector<std::string>{"e1:2379", "e2:2379"}));
  EXPECT_EQ(c->cluster.peer_ca_file, "/etc/kvstash/peers-ca.crt");

  c = ParseConfig("", {{"cluster.etcd_endpoints", "e1:2379", true},
                       {"cluster.etcd_ca_file", "/etc/etcd/ca.crt", true},
                       {"cluster.etcd_cert_file", "/etc/etcd/me.crt", true},
                       {"cluster.etcd_key_file", "/etc/etcd/me.key", true}});
  ASSERT_TRUE(c.ok()) << c.status();
  etcd = c->cluster.Etcd();
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  EXPECT_TRUE(etcd->tls);
  EXPECT_EQ(etcd->tls_files.cert.path, "/etc/etcd/me.crt");
  // Messages about the files name the keys they came from.
  EXPECT_EQ(etcd->tls_files.key.setting, "cluster.etcd_key_file");
  absl::StatusOr<ServerConfig> again = ParseConfig(EmitConfig(*c), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->cluster.etcd_ca_file, "/etc/etcd/ca.crt");
}

TEST(ConfigClusterTest, SetOverridesTheKeysAsTheDeployFilesUseThem) {
  absl::StatusOr<ServerConfig> c =
      ParseConfig("", {{"cluster.enabled", "true"},
                       {"cluster.etcd_endpoints", "etcd-0.etcd:2379", /*literal=*/true},
                       {"cluster.member_id", "worker-12", /*literal=*/true},
                       {"cluster.advertise_grpc", "10.2.3.4:7070", /*literal=*/true}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->cluster.enabled);
  EXPECT_EQ(c->cluster.member_id, "worker-12");
  EXPECT_EQ(c->cluster.advertise_grpc, "10.2.3.4:7070");
}

TEST(ConfigClusterTest, EnabledWithoutEndpointsNamesTheField) {
  EXPECT_THAT(ErrorOf("cluster: {enabled: true}"),
              HasSubstr("cluster.etcd_endpoints: must be set"));
  // Off, an empty list is fine: the section may be filled in before it is switched on.
  EXPECT_TRUE(ParseConfig("cluster: {enabled: false}", {}).ok());
}

TEST(ConfigClusterTest, BadValuesAreRefusedNamingTheField) {
  for (const auto& [sets, field] :
       std::vector<std::tuple<std::vector<ConfigOverride>, const char*>>{
           {{{"cluster.name", "a/b"}}, "cluster.name: "},
           {{{"cluster.name", "", true}}, "cluster.name: "},
           {{{"cluster.member_id", "has space", true}}, "cluster.member_id: "},
           {{{"cluster.member_id", std::string(129, 'x'), true}}, "cluster.member_id: "},
           {{{"cluster.etcd_endpoints", "h1:2379,,h2:2379", true}}, "cluster.etcd_endpoints: "},
           {{{"cluster.etcd_endpoints", "grpc://h1:2379", true}}, "cluster.etcd_endpoints: "},
           {{{"cluster.etcd_endpoints", "https://h1:2379,http://h2:2379", true}},
            "cluster.etcd_endpoints: "},
           {{{"cluster.etcd_endpoints", "http://h1:2379", true}, {"cluster.etcd_ca_file", "/ca"}},
            "cluster.etcd_endpoints: "},
           {{{"cluster.advertise_grpc", "no-port", true}}, "cluster.advertise_grpc: "},
           {{{"cluster.advertise_ucx", "h:99999", true}}, "cluster.advertise_ucx: "},
           {{{"cluster.lease_ttl_s", "1"}}, "cluster.lease_ttl_s"},
           {{{"cluster.lease_ttl_s", "3601"}}, "cluster.lease_ttl_s"},
           {{{"cluster.peer_probe_interval_ms", "-1"}}, "cluster.peer_probe_interval_ms"},
           {{{"cluster.peer_ca_file", "/ca.crt", true}}, "cluster.peer_ca_file: "},
           {{{"cluster.enabled", "maybe"}}, "cluster.enabled"},
           {{{"cluster.zoen", "a"}}, "cluster.zoen: unknown key"}}) {
    EXPECT_THAT(ErrorOf("", sets), HasSubstr(field)) << sets[0].key << "=" << sets[0].value;
  }
}

}  // namespace
}  // namespace kvstash::server
