#include "server/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/ucx_setup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/ucx_wire.h"
#include "server/config_file.h"
#include "server/config_schema.h"
#include "server/config_test_util.h"
#include "storage/policy/eviction_policy.h"
#include "storage/policy/policies.h"

namespace kvstash::server {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

void ExpectSameConfig(const ServerConfig& a, const ServerConfig& b) {
  EXPECT_EQ(EmitConfig(a), EmitConfig(b));
  EXPECT_EQ(a.server.grpc_listen, b.server.grpc_listen);
  EXPECT_EQ(a.storage.dram.capacity_bytes, b.storage.dram.capacity_bytes);
}

TEST(ConfigTest, EmbeddedDefaultMatchesInClassDefaults) {
  ServerConfig parsed = MustParse(DefaultConfigYaml());
  ServerConfig defaults;
  ExpectSameConfig(parsed, defaults);
  EXPECT_EQ(parsed.server.max_frame_bytes, 4u << 20);
  EXPECT_EQ(parsed.storage.dram.huge_pages, storage::ChunkStoreOptions::HugePages::kAuto);
}

// Dotted key and scalar text of every value in `node`, in document order.
void Flatten(const YAML::Node& node, const std::string& prefix, std::vector<ConfigEntry>* out) {
  for (const auto& entry : node) {
    const std::string key = prefix + entry.first.Scalar();
    if (entry.second.IsMap()) {
      Flatten(entry.second, key + ".", out);
    } else {
      out->push_back({key, entry.second.Scalar()});
    }
  }
}

// "key = value" of each key (sections left out).
std::vector<std::string> Describe(const std::vector<ConfigEntry>& entries) {
  std::vector<std::string> out;
  for (const ConfigEntry& e : entries) {
    if (!e.section) out.push_back(e.key + " = " + e.value);
  }
  return out;
}

TEST(ConfigTest, EmbeddedDefaultNamesEveryKeyWithItsDefault) {
  std::vector<ConfigEntry> yaml;
  Flatten(YAML::Load(DefaultConfigYaml()), "", &yaml);
  EXPECT_THAT(Describe(yaml), ElementsAreArray(Describe(ConfigEntries(ServerConfig{}))));
}

TEST(ConfigTest, EmptyDocumentGivesDefaults) {
  ExpectSameConfig(MustParse(""), ServerConfig{});
  ExpectSameConfig(MustParse("server: {}\nstorage:\n"), ServerConfig{});
}

TEST(ConfigTest, ReadsEveryField) {
  ServerConfig c = MustParse(R"(
server:
  grpc_listen: "0.0.0.0:9000"
  max_frame_bytes: 8MiB
  send_frame_bytes: 512KiB
  max_keys_per_request: 1000
  shutdown_grace_ms: 250
data_dir: /tmp/kv
log: { level: debug, format: json }
storage:
  max_chunk_bytes: 64MiB
  max_lease_ms: 5000
  index_shards: 8
  dram: { capacity_bytes: 2GiB, page_bytes: 2MiB, huge_pages: off, eviction: lru }
)");
  EXPECT_EQ(c.server.grpc_listen, "0.0.0.0:9000");
  EXPECT_EQ(c.server.max_frame_bytes, 8u << 20);
  EXPECT_EQ(c.server.send_frame_bytes, 512u << 10);
  EXPECT_EQ(c.server.max_keys_per_request, 1000u);
  EXPECT_EQ(c.server.shutdown_grace_ms, 250);
  EXPECT_EQ(c.data_dir, "/tmp/kv");
  EXPECT_EQ(c.log.level, LogLevel::kDebug);
  EXPECT_EQ(c.log.format, LogFormat::kJson);
  EXPECT_EQ(c.storage.max_chunk_bytes, 64u << 20);
  EXPECT_EQ(c.storage.max_lease_ms, 5000);
  EXPECT_EQ(c.storage.index_shards, 8);
  EXPECT_EQ(c.storage.dram.capacity_bytes, 2ull << 30);
  EXPECT_EQ(c.storage.dram.page_bytes, 2u << 20);
  EXPECT_EQ(c.storage.dram.huge_pages, storage::ChunkStoreOptions::HugePages::kOff);
}

TEST(ConfigTest, ConvertsToChunkStoreOptions) {
  ServerConfig c = MustParse("storage: {max_lease_ms: 1500, dram: {capacity_bytes: 64MiB}}");
  storage::ChunkStoreOptions o = c.ToChunkStoreOptions();
  EXPECT_EQ(o.dram_capacity_bytes, 64u << 20);
  EXPECT_EQ(o.page_bytes, 1u << 20);
  EXPECT_EQ(o.max_chunk_bytes, 256u << 20);
  EXPECT_EQ(o.index_shards, 64);
  EXPECT_EQ(o.max_lease, absl::Milliseconds(1500));
  EXPECT_EQ(o.dram_eviction, "lru");
}

TEST(ConfigTest, OverridesApplyInOrderAndCreateSections) {
  ServerConfig c = MustParse("storage: {dram: {capacity_bytes: 2GiB}}",
                             {{"storage.dram.capacity_bytes", "8GiB"},
                              {"log.level", "warn"},
                              {"storage.dram.capacity_bytes", "3GiB"},
                              {"server.grpc_listen", "[::]:0", /*literal=*/true}});
  EXPECT_EQ(c.storage.dram.capacity_bytes, 3ull << 30);
  EXPECT_EQ(c.log.level, LogLevel::kWarn);
  EXPECT_EQ(c.server.grpc_listen, "[::]:0");
}

TEST(ConfigTest, OverrideOfUnknownKeyIsRejectedByName) {
  EXPECT_THAT(ErrorOf("", {{"storage.dram.capasity_bytes", "1GiB"}}),
              HasSubstr("storage.dram.capasity_bytes: unknown key"));
}

TEST(ConfigTest, OverrideThroughAValueIsRejected) {
  EXPECT_THAT(ErrorOf(DefaultConfigYaml(), {{"data_dir.x", "1"}}),
              HasSubstr("data_dir: is a value"));
  EXPECT_THAT(ErrorOf("", {{"data_dir.x", "1"}}), HasSubstr("data_dir: expected a string"));
  EXPECT_THAT(ErrorOf("", {{"a..b", "1"}}), HasSubstr("bad key"));
}

TEST(ConfigTest, SessionsAndTenantQuotasReachTheStore) {
  absl::StatusOr<ServerConfig> c = ParseConfig(
      "storage: {sessions: {idle_timeout_ms: 1000}, tenants: {pin_quota_bytes: 0, "
      "overrides: \"acme:dram=2GiB,pin=1MiB\"}}",
      {});
  ASSERT_TRUE(c.ok()) << c.status();
  const storage::ChunkStoreOptions o = c->ToChunkStoreOptions();
  EXPECT_EQ(o.sessions.idle_timeout_ms, 1000);
  EXPECT_EQ(o.tenants.pin_quota_bytes, 0u);
  EXPECT_EQ(o.tenants.overrides, "acme:dram=2GiB,pin=1MiB");
  EXPECT_THAT(ErrorOf("", {{"storage.tenants.overrides", "acme:dram=lots"}}),
              HasSubstr("storage.tenants.overrides: tenant \"acme\": dram:"));
  EXPECT_THAT(ErrorOf("storage: {sessions: {max_sessions: 0}}"),
              HasSubstr("storage.sessions.max_sessions"));
}

TEST(ConfigTest, UnknownKeysAreRejectedNamingThem) {
  EXPECT_THAT(ErrorOf("server: {grpc_lisen: \"1.2.3.4:5\"}"),
              HasSubstr("server.grpc_lisen: unknown key"));
  EXPECT_THAT(ErrorOf("storage: {dram: {evicton: lru}}"),
              HasSubstr("storage.dram.evicton: unknown key"));
  EXPECT_THAT(ErrorOf("lgo: {level: info}"), HasSubstr("lgo: unknown key"));
}

TEST(ConfigTest, BadValuesAreRejectedNamingTheField) {
  EXPECT_EQ(ErrorOf("storage: {dram: {capacity_bytes: lots}}"),
            "storage.dram.capacity_bytes: expected a byte size like 4GiB, got \"lots\"");
  EXPECT_THAT(ErrorOf("log: {level: loud}"), HasSubstr("log.level: expected one of"));
  EXPECT_THAT(ErrorOf("log: {format: xml}"), HasSubstr("log.format"));
  EXPECT_THAT(ErrorOf("server: {max_keys_per_request: -1}"),
              HasSubstr("server.max_keys_per_request: expected an integer"));
  EXPECT_THAT(ErrorOf("server: {shutdown_grace_ms: 1.5}"), HasSubstr("server.shutdown_grace_ms"));
  EXPECT_THAT(ErrorOf("storage: {index_shards: 12}"),
              HasSubstr("storage.index_shards: must be a power of two"));
  EXPECT_THAT(ErrorOf("storage: {dram: {page_bytes: 3MiB}}"),
              HasSubstr("storage.dram.page_bytes: must be a power of two"));
  EXPECT_THAT(ErrorOf("storage: {dram: {page_bytes: 1KiB}}"),
              HasSubstr("storage.dram.page_bytes: must be between 4KiB and 1GiB"));
  EXPECT_THAT(ErrorOf("storage: {dram: {huge_pages: maybe}}"),
              HasSubstr("storage.dram.huge_pages"));
  EXPECT_THAT(ErrorOf("storage: {dram: {eviction: random}}"), HasSubstr("storage.dram.eviction"));
  EXPECT_THAT(ErrorOf("storage: {dram: {capacity_bytes: 64KiB}}"),
              HasSubstr("storage.dram.capacity_bytes: must be at least page_bytes"));
  EXPECT_THAT(ErrorOf("storage: [1, 2]"), HasSubstr("storage: expected a section"));
  EXPECT_THAT(ErrorOf("data_dir: [a]"), HasSubstr("data_dir: expected a string"));
  EXPECT_THAT(ErrorOf("data_dir:"), HasSubstr("data_dir: expected a string, got no value"));
}

TEST(ConfigTest, CrossFieldChecks) {
  EXPECT_THAT(ErrorOf("server: {grpc_listen: localhost}"), HasSubstr("server.grpc_listen"));
  EXPECT_THAT(ErrorOf("server: {grpc_listen: \"host:99999\"}"), HasSubstr("server.grpc_listen"));
  EXPECT_THAT(ErrorOf("server: {max_frame_bytes: 1MiB, send_frame_bytes: 2MiB}"),
              HasSubstr("server.send_frame_bytes: must not exceed server.max_frame_bytes"));
  EXPECT_THAT(ErrorOf("server: {max_frame_bytes: 64KiB, send_frame_bytes: 64KiB}"),
              HasSubstr("server.max_keys_per_request"));
  MustParse("server: {grpc_listen: \"unix:/tmp/kvstash.sock\"}");
  EXPECT_THAT(ErrorOf("server: {local_socket: run/kvstash.sock}"),
              HasSubstr("server.local_socket: \"run/kvstash.sock\" is not an absolute path"));
  // The local arena socket beside it needs 6 more bytes of the 107 a socket path holds.
  const std::string near_limit = "/" + std::string(102, 'k');
  EXPECT_THAT(ErrorOf("server: {local_socket: " + near_limit + "}"),
              HasSubstr("server.local_socket: \"" + near_limit + ".arena\" is 109 bytes"));
  MustParse("server: {local_socket: /" + std::string(100, 'k') + "}");
}

TEST(ConfigTest, SyntaxErrorsSayWhere) {
  EXPECT_THAT(ErrorOf("server: {grpc_listen: \"x\"\nlog: ["), HasSubstr("line"));
  EXPECT_THAT(ErrorOf("- a\n- b\n"), HasSubstr("top level"));
}

TEST(ConfigTest, EmitRoundTrips) {
  ServerConfig c = MustParse("", {{"storage.dram.capacity_bytes", "1536MiB"},
                                  {"server.max_frame_bytes", "4100000"},
                                  {"log.format", "json"},
                                  {"storage.dram.huge_pages", "on"},
                                  {"data_dir", "/var/lib/kv stash"}});
  std::string yaml = EmitConfig(c);
  EXPECT_THAT(yaml, HasSubstr("capacity_bytes: 1536MiB"));
  ServerConfig again = MustParse(yaml);
  EXPECT_EQ(EmitConfig(again), yaml);
  EXPECT_EQ(again.server.max_frame_bytes, 4100000u);
  EXPECT_EQ(again.data_dir, "/var/lib/kv stash");
  EXPECT_EQ(again.storage.dram.huge_pages, storage::ChunkStoreOptions::HugePages::kOn);
}

TEST(ConfigTest, LoadsFilesAndNamesThemInErrors) {
  const std::string path = ::testing::TempDir() + "/kvstash_config_test.yaml";
  {
    std::ofstream out(path);
    out << "storage:\n  dram:\n    capacity_bytes: 64MiB\n";
  }
  absl::StatusOr<ServerConfig> c = LoadConfigFile(path, {{"log.level", "error"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->storage.dram.capacity_bytes, 64u << 20);
  EXPECT_EQ(c->log.level, LogLevel::kError);
  {
    std::ofstream out(path);
    out << "storage: {dram: {capacity_bytes: lots}}\n";
  }
  c = LoadConfigFile(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(path + ": storage.dram.capacity_bytes"));
  std::remove(path.c_str());
  EXPECT_EQ(LoadConfigFile(path, {}).status().code(), absl::StatusCode::kNotFound);
}

TEST(ConfigTest, NvmeDefaultsToATierUnderTheDataDir) {
  ServerConfig c = MustParse("data_dir: /srv/kv");
  EXPECT_TRUE(c.storage.nvme.enabled);
  EXPECT_EQ(c.storage.nvme.capacity_bytes, 16ull << 30);
  storage::ChunkStoreOptions o = c.ToChunkStoreOptions();
  EXPECT_EQ(o.nvme.path, "/srv/kv/nvme");
  EXPECT_EQ(o.nvme.capacity_bytes, 16ull << 30);
  EXPECT_TRUE(o.nvme.promote_on_hit);
  EXPECT_TRUE(o.nvme.low_priority_background);
  EXPECT_FALSE(o.nvme.write_through);
  EXPECT_EQ(MustParse("", {{"storage.nvme.enabled", "false"}}).ToChunkStoreOptions().nvme.path, "");
}

TEST(ConfigTest, ReadsEveryNvmeField) {
  ServerConfig c = MustParse(R"(
storage:
  nvme:
    enabled: true
    path: /mnt/ssd/kv
    capacity_bytes: 256MiB
    demotion_threads: 3
    read_threads: 6
    read_bytes_per_s: 200MiB
    demotion_queue_chunks: 64
    write_through: true
    sync_writes: true
    promote_on_hit: false
    low_priority_background: false
    eviction: tinylfu
    admission_min_hits: 2
)");
  storage::ChunkStoreOptions o = c.ToChunkStoreOptions();
  EXPECT_EQ(o.nvme.path, "/mnt/ssd/kv");
  EXPECT_EQ(o.nvme.capacity_bytes, 256u << 20);
  EXPECT_EQ(o.nvme.demotion_threads, 3);
  EXPECT_EQ(o.nvme.read_threads, 6);
  EXPECT_EQ(o.nvme.read_bytes_per_s, 200u << 20);
  EXPECT_EQ(o.nvme.demotion_queue_chunks, 64);
  EXPECT_TRUE(o.nvme.write_through);
  EXPECT_TRUE(o.nvme.sync_writes);
  EXPECT_FALSE(o.nvme.promote_on_hit);
  EXPECT_FALSE(o.nvme.low_priority_background);
  EXPECT_EQ(o.nvme.eviction, "tinylfu");
  EXPECT_EQ(o.nvme.admission_min_hits, 2);
  std::string yaml = EmitConfig(c);
  EXPECT_THAT(yaml, HasSubstr("capacity_bytes: 256MiB"));
  EXPECT_THAT(yaml, HasSubstr("read_bytes_per_s: 200MiB"));
  EXPECT_EQ(EmitConfig(MustParse(yaml)), yaml);
}

TEST(ConfigTest, RefusesBadNvmeFieldsByName) {
  EXPECT_THAT(ErrorOf("storage: {nvme: {capacity_bytes: lots}}"),
              HasSubstr("storage.nvme.capacity_bytes"));
  EXPECT_THAT(ErrorOf("", {{"storage.nvme.demotion_threads", "0"}}),
              HasSubstr("storage.nvme.demotion_threads"));
  EXPECT_THAT(ErrorOf("", {{"storage.nvme.read_threads", "65"}}),
              HasSubstr("storage.nvme.read_threads"));
  EXPECT_THAT(ErrorOf("", {{"storage.nvme.demotion_queue_chunks", "-1"}}),
              HasSubstr("storage.nvme.demotion_queue_chunks"));
  EXPECT_THAT(ErrorOf("", {{"storage.nvme.write_through", "maybe"}}),
              HasSubstr("storage.nvme.write_through"));
  EXPECT_THAT(ErrorOf("", {{"storage.nvme.enabled", "yes please"}}),
              HasSubstr("storage.nvme.enabled"));
  EXPECT_THAT(ErrorOf("", {{"storage.nvme.sync", "true"}}), HasSubstr("storage.nvme.sync"));
  EXPECT_THAT(ErrorOf("", {{"storage.nvme.eviction", "mru"}}), HasSubstr("storage.nvme.eviction"));
  EXPECT_THAT(ErrorOf("", {{"storage.nvme.admission_min_hits", "-1"}}),
              HasSubstr("storage.nvme.admission_min_hits"));
}

TEST(ConfigTest, EveryEvictionPolicyIsAcceptedPerTier) {
  std::vector<std::string> choices;
  for (const auto& [name, value] : config_schema::kEvictionPolicies) choices.push_back(name);
  EXPECT_EQ(choices, storage::KnownEvictionPolicies());
  for (const std::string& name : storage::KnownEvictionPolicies()) {
    ServerConfig c =
        MustParse("", {{"storage.dram.eviction", name}, {"storage.nvme.eviction", name}});
    storage::ChunkStoreOptions o = c.ToChunkStoreOptions();
    EXPECT_EQ(o.dram_eviction, name);
    EXPECT_EQ(o.nvme.eviction, name);
    EXPECT_TRUE(o.Validate().ok()) << name;
  }
  const std::string error = ErrorOf("storage: {dram: {eviction: random}}");
  EXPECT_THAT(error, HasSubstr("storage.dram.eviction"));
  EXPECT_THAT(error, HasSubstr("chain"));  // the message lists the choices
}

TEST(ConfigTest, ReadsTheMetricsSection) {
  ServerConfig c = MustParse(
      "metrics: {enabled: false, listen: \"0.0.0.0:0\", namespace_labels: true, "
      "max_namespaces: 8}");
  EXPECT_FALSE(c.metrics.enabled);
  EXPECT_EQ(c.metrics.listen, "0.0.0.0:0");
  EXPECT_TRUE(c.metrics.namespace_labels);
  EXPECT_EQ(c.metrics.max_namespaces, 8u);
  const std::string yaml = EmitConfig(c);
  EXPECT_EQ(EmitConfig(MustParse(yaml)), yaml);
  EXPECT_EQ(MustParse("").metrics.listen, "127.0.0.1:7071");
  EXPECT_THAT(ErrorOf("metrics: {listen: nowhere}"), HasSubstr("metrics.listen"));
  EXPECT_THAT(ErrorOf("metrics: {max_namespaces: 0}"), HasSubstr("metrics.max_namespaces"));
  EXPECT_THAT(ErrorOf("metrics: {port: 1}"), HasSubstr("metrics.port"));
}

}  // namespace
}  // namespace kvstash::server

namespace kvstash::server {
namespace {

TEST(ConfigTest, ReadsAndChecksTheUcxSection) {
  absl::StatusOr<ServerConfig> c = ParseConfig(R"(
ucx: { enabled: false, listen: "0.0.0.0:9072", tls: "sm,self", rndv_thresh_bytes: 64KiB,
       tcp_segment_bytes: 256KiB, worker_threads: 2 })",
                                               {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->ucx.enabled);
  EXPECT_EQ(c->ucx.listen, "0.0.0.0:9072");
  EXPECT_EQ(c->ucx.tls, "sm,self");
  EXPECT_EQ(c->ucx.rndv_thresh_bytes, 64u << 10);
  EXPECT_EQ(c->ucx.worker_threads, 2);
  EXPECT_EQ(c->ucx.tcp_segment_bytes, 256u << 10);
  absl::StatusOr<ServerConfig> again = ParseConfig(EmitConfig(*c), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->ucx.tls, "sm,self");
  EXPECT_EQ(again->ucx.tcp_segment_bytes, 256u << 10);
  EXPECT_EQ(ServerConfig().ucx.tcp_segment_bytes, 256u << 10);
  EXPECT_EQ(ServerConfig().ucx.tcp_segment_bytes, ucx_setup::kDefaultTcpSegmentBytes);
  for (const auto& [key, value, field] :
       {std::tuple<const char*, const char*, const char*>{"ucx.worker_threads", "0",
                                                          "ucx.worker_threads"},
        {"ucx.listen", "nowhere", "ucx.listen"},
        {"ucx.tcp_segment_bytes", "8KiB", "ucx.tcp_segment_bytes"},
        {"ucx.tcp_segment_bytes", "32MiB", "ucx.tcp_segment_bytes"},
        {"ucx.tls", "sm,bogus", "ucx.tls: \"bogus\" not available on this host"},
        {"ucx.bogus", "1", "ucx.bogus"}}) {
    absl::StatusOr<ServerConfig> bad = ParseConfig("", {{key, value}});
    ASSERT_FALSE(bad.ok()) << key;
    EXPECT_NE(bad.status().message().find(field), std::string::npos) << bad.status();
  }
}

}  // namespace
}  // namespace kvstash::server
