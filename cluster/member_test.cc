// Members, their JSON and key layout, and the parsing of etcd endpoints (no etcd needed).
#include "cluster/member.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "cluster/etcd_client.h"
#include "common/host_port.h"
#include "gtest/gtest.h"

namespace kvstash::cluster {
namespace {

Member Sample() {
  Member m;
  m.id = "node-1.a_b";
  m.grpc_address = "10.0.0.1:7070";
  m.ucx_address = "[fe80::1]:7071";
  m.zone = "rack \"7\"\\\n";
  m.tiers = {{"dram", 18446744073709551615ull}, {"nvme", 4ull << 40}};
  m.started_unix_ms = 1795000000123;
  return m;
}

TEST(MemberTest, JsonRoundTrip) {
  const Member m = Sample();
  const std::string json = MemberToJson(m);
  EXPECT_NE(json.find("{\"tier\":\"dram\",\"capacity_bytes\":18446744073709551615}"),
            std::string::npos)
      << json;
  // Readers that predate `tiers` still find the DRAM and NVMe capacities.
  EXPECT_NE(json.find("\"dram_capacity_bytes\":18446744073709551615"), std::string::npos) << json;
  EXPECT_NE(json.find("\"nvme_capacity_bytes\":4398046511104"), std::string::npos) << json;
  auto back = MemberFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status() << " " << json;
  EXPECT_EQ(*back, m);
  Member minimal;
  minimal.id = "x";
  auto min_back = MemberFromJson(MemberToJson(minimal));
  ASSERT_TRUE(min_back.ok()) << min_back.status();
  EXPECT_EQ(*min_back, minimal);
}

TEST(MemberTest, JsonIgnoresUnknownFieldsAndTakesNumbersAsStrings) {
  auto m = MemberFromJson(
      R"({"id":"n1","future":{"a":[1,2]},"dram_capacity_bytes":"42","started_unix_ms":-1})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->id, "n1");
  // A record written before `tiers`: its DRAM capacity becomes the DRAM entry.
  EXPECT_EQ(m->tiers, (std::vector<TierCapacity>{{"dram", 42}}));
  EXPECT_EQ(m->started_unix_ms, -1);
  EXPECT_TRUE(m->grpc_address.empty());
}

TEST(MemberTest, TiersOutrankTheOlderFields) {
  auto m =
      MemberFromJson(R"({"id":"n1","tiers":[{"tier":"gpu","capacity_bytes":"7"},{"tier":"dram",)"
                     R"("capacity_bytes":9}],"dram_capacity_bytes":1,"nvme_capacity_bytes":2})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->tiers, (std::vector<TierCapacity>{{"gpu", 7}, {"dram", 9}}));
}

TEST(MemberTest, BadJsonIsInvalidArgument) {
  for (const char* json : {"", "{", "[]", "{\"id\":\"n1\"", "{\"id\":7}", "{}", "{\"id\":\"\"}",
                           "{\"id\":\"a b\"}", "{\"id\":\"n\",\"dram_capacity_bytes\":-5}",
                           "{\"id\":\"n\",\"nvme_capacity_bytes\":1.5}", "null"}) {
    auto m = MemberFromJson(json);
    EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << json << " -> " << m.status();
  }
  EXPECT_NE(MemberFromJson("{}").status().message().find("id"), absl::string_view::npos);
}

TEST(MemberTest, Validation) {
  EXPECT_TRUE(ValidateMemberId("host-1.example_2").ok());
  EXPECT_TRUE(ValidateMemberId(std::string(128, 'a')).ok());
  EXPECT_FALSE(ValidateMemberId("").ok());
  EXPECT_FALSE(ValidateMemberId(std::string(129, 'a')).ok());
  EXPECT_FALSE(ValidateMemberId("a/b").ok());
  EXPECT_FALSE(ValidateMemberId("a:1").ok());
  EXPECT_TRUE(ValidateClusterName("prod-eu.1").ok());
  EXPECT_FALSE(ValidateClusterName(std::string(65, 'a')).ok());
  EXPECT_FALSE(ValidateClusterName("a b").ok());
  EXPECT_TRUE(ValidateClusterPrefix("/kvstash/default").ok());
  EXPECT_TRUE(ValidateClusterPrefix("/x").ok());
  EXPECT_FALSE(ValidateClusterPrefix("").ok());
  EXPECT_FALSE(ValidateClusterPrefix("/").ok());
  EXPECT_FALSE(ValidateClusterPrefix("kvstash/default").ok());
  EXPECT_FALSE(ValidateClusterPrefix("/kvstash/default/").ok());
  EXPECT_FALSE(ValidateClusterPrefix("/kv stash").ok());
  EXPECT_FALSE(ValidateClusterPrefix("/kv\tstash").ok());
  EXPECT_FALSE(ValidateClusterPrefix(std::string("/kv\0x", 5)).ok());
}

TEST(MemberTest, ValidateMemberChecksWhatClientsWouldReject) {
  EXPECT_TRUE(ValidateMember(Sample()).ok());
  Member m = Sample();
  m.grpc_address = "";
  m.ucx_address = "";
  EXPECT_TRUE(ValidateMember(m).ok());
  for (const char* zone : {"r\xc3\xa9gion", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xbf\xbf"}) {
    m.zone = zone;
    EXPECT_TRUE(ValidateMember(m).ok()) << zone;
    // What passes here the JSON reader takes.
    auto back = MemberFromJson(MemberToJson(m));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->zone, m.zone);
  }
  // Latin-1, a lone continuation byte, cut short, overlong, a surrogate, past U+10FFFF.
  for (const char* zone : {"r\xe9gion", "\x80", "\xe2\x82", "\xc0\xaf", "\xe0\x80\xaf",
                           "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff"}) {
    m.zone = zone;
    EXPECT_TRUE(absl::IsInvalidArgument(ValidateMember(m))) << absl::CHexEscape(zone);
    EXPECT_FALSE(MemberFromJson(MemberToJson(m)).ok()) << absl::CHexEscape(zone);
  }
  m.zone = "";
  m.grpc_address = "nohost";
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateMember(m)));
  m.grpc_address = "h:1";
  m.ucx_address = "h:99999";
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateMember(m)));
  m.ucx_address = "h:2";
  m.id = "bad id";
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateMember(m)));
}

TEST(MemberTest, KeyLayout) {
  EXPECT_EQ(ClusterPrefix("default"), "/kvstash/default");
  EXPECT_EQ(MembersPrefix("/kvstash/default"), "/kvstash/default/members/");
  EXPECT_EQ(MemberKey("/kvstash/default", "n1"), "/kvstash/default/members/n1");
}

TEST(MemberTest, SortedByIdKeepsTheLastDuplicate) {
  std::vector<Member> in(4);
  in[0].id = "b";
  in[1].id = "a";
  in[2].id = "b";
  in[2].zone = "later";
  in[3].id = "c";
  std::vector<Member> out = SortedById(in);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].id, "a");
  EXPECT_EQ(out[1].id, "b");
  EXPECT_EQ(out[1].zone, "later");
  EXPECT_EQ(out[2].id, "c");
  EXPECT_TRUE(SortedById({}).empty());
}

TEST(EtcdEndpointsTest, Parse) {
  auto eps = EtcdOptionsFrom(" h1:2379, http://h2:2380/ ,[::1]:2379,HTTP://10.0.0.1:1", {});
  ASSERT_TRUE(eps.ok()) << eps.status();
  EXPECT_EQ(eps->endpoints,
            (std::vector<std::string>{"h1:2379", "h2:2380", "[::1]:2379", "10.0.0.1:1"}));
  EXPECT_FALSE(eps->tls);
  EXPECT_TRUE(eps->Validate().ok());
  for (const char* bad :
       {"", "h1:2379,", ",h1:1", "grpc://h1:2379", "h1", "h1:0", "h1:65536", "h1:x", ":2379",
        "unix:///tmp/x", "h 1:2379", "::1:2379", "https://h1:1,http://h2:1"}) {
    auto parsed = EtcdOptionsFrom(bad, {});
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << bad << " -> " << parsed.status();
  }
}

TEST(EtcdEndpointsTest, TlsFromSchemeOrFiles) {
  auto https = EtcdOptionsFrom("https://h1:2379,HTTPS://h2:2379/", {});
  ASSERT_TRUE(https.ok()) << https.status();
  EXPECT_TRUE(https->tls);
  EXPECT_EQ(https->endpoints, (std::vector<std::string>{"h1:2379", "h2:2379"}));
  EXPECT_TRUE(https->Validate().ok());

  TlsChannelFiles files;
  files.ca = {"/etc/etcd/ca.crt", "cluster.etcd_ca_file"};
  auto bare = EtcdOptionsFrom("h1:2379", files);
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_TRUE(bare->tls);
  EXPECT_EQ(bare->tls_files.ca.path, "/etc/etcd/ca.crt");
  // A plaintext scheme with a CA file is a contradiction, not a silent choice.
  auto http = EtcdOptionsFrom("http://h1:2379", files);
  EXPECT_TRUE(absl::IsInvalidArgument(http.status())) << http.status();
  EXPECT_NE(http.status().message().find("https://"), absl::string_view::npos);

  EtcdOptions options;
  options.endpoints = {"https://h1:2379"};
  EXPECT_TRUE(absl::IsInvalidArgument(options.Validate()));
  options.tls = true;
  EXPECT_TRUE(options.Validate().ok());
  options.endpoints = {"http://h1:2379"};
  EXPECT_TRUE(absl::IsInvalidArgument(options.Validate()));
  options.endpoints = {"h1:2379"};
  options.tls = false;
  options.tls_files = files;
  EXPECT_TRUE(absl::IsInvalidArgument(options.Validate()));
}

TEST(EtcdEndpointsTest, CreateChecksTheTlsFilesUpFront) {
  EtcdOptions options;
  options.endpoints = {"127.0.0.1:2379"};
  options.tls = true;
  options.tls_files.ca = {"/nonexistent/ca.crt", "cluster.etcd_ca_file"};
  auto client = EtcdClient::Create(options);
  ASSERT_TRUE(absl::IsInvalidArgument(client.status())) << client.status();
  EXPECT_NE(client.status().message().find("cluster.etcd_ca_file"), absl::string_view::npos);
  options.tls_files.ca = {};
  options.tls_files.cert = {"/nonexistent/client.crt", "cluster.etcd_cert_file"};
  client = EtcdClient::Create(options);
  ASSERT_TRUE(absl::IsInvalidArgument(client.status())) << client.status();
  EXPECT_NE(client.status().message().find("key"), absl::string_view::npos);
}

TEST(EtcdEndpointsTest, OptionsValidate) {
  EtcdOptions options;
  EXPECT_TRUE(absl::IsInvalidArgument(options.Validate()));
  options.endpoints = {"127.0.0.1:2379"};
  EXPECT_TRUE(options.Validate().ok());
  options.call_timeout_ms = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(options.Validate()));
  options.call_timeout_ms = 100;
  options.endpoints.push_back("bad");
  EXPECT_TRUE(absl::IsInvalidArgument(options.Validate()));
  EXPECT_TRUE(absl::IsInvalidArgument(EtcdClient::Create(options).status()));
}

TEST(HostPortTest, RoundTrip) {
  auto hp = ParseHostPort("[2001:db8::1]:80");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->host, "2001:db8::1");
  EXPECT_EQ(hp->port, 80);
  EXPECT_EQ(hp->ToString(), "[2001:db8::1]:80");
  EXPECT_FALSE(ParseHostPort("[]:80").ok());
  EXPECT_FALSE(ParseHostPort("[::1:80").ok());
  EXPECT_FALSE(ParseHostPort("h:+80").ok());
}

}  // namespace
}  // namespace kvstash::cluster
