// The daemon's config keys, each declared once: VisitConfig walks every section and field
// of a ServerConfig in file order, naming its YAML key, its kind (string, byte size,
// integer, bool, one of a set of names) and its accepted range. Reading (config.cc),
// EmitConfig, `--set` overrides (applied to the YAML tree, then read) and the tests that
// hold kDefaultConfigYaml and README.md's reference table to the defaults all run over it.
// A field's default and its documentation live once, on the struct member (config.h, or
// the storage option it is).
//
// A visitor V provides:
//   void Begin(const char* section);  ...  void End();
//   void String(const char* key, std::string* field);
//   void Size(const char* key, uint64_t* field, SizeRange range);
//   template <typename T> void Int(const char* key, T* field, IntRange range);
//   void Bool(const char* key, bool* field);
//   template <typename T> void Enum(const char* key, T* field, Choices<T> choices);
//
// Thread-safety: stateless templates.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/types/span.h"
#include "common/ucx_setup.h"
#include "server/config.h"

namespace kvstash::server {

// Accepted byte sizes: [min, max], and a power of two when power_of_two is set.
struct SizeRange {
  uint64_t min = 0;
  uint64_t max = std::numeric_limits<uint64_t>::max();
  bool power_of_two = false;
};
// Accepted integers, as SizeRange.
struct IntRange {
  int64_t min = 0;
  int64_t max = std::numeric_limits<int64_t>::max();
  bool power_of_two = false;
};
// The names a field accepts and the values they stand for; the first name of a value is
// the one written back (and the one LogLevelName and the like return).
template <typename T>
using Choices = absl::Span<const std::pair<const char*, T>>;

namespace config_schema {

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr int64_t kHourMs = 3600ll * 1000;
constexpr int64_t kDayMs = 24 * kHourMs;
constexpr int kMaxThreads = 64;

using HugePages = storage::ChunkStoreOptions::HugePages;

inline const std::pair<const char*, LogLevel> kLogLevels[] = {{"debug", LogLevel::kDebug},
                                                              {"info", LogLevel::kInfo},
                                                              {"warn", LogLevel::kWarn},
                                                              {"error", LogLevel::kError}};
inline const std::pair<const char*, LogFormat> kLogFormats[] = {{"logfmt", LogFormat::kLogfmt},
                                                                {"json", LogFormat::kJson}};
// true/false are accepted because YAML users write them for on/off out of habit.
inline const std::pair<const char*, HugePages> kHugePagesModes[] = {{"off", HugePages::kOff},
                                                                    {"auto", HugePages::kAuto},
                                                                    {"on", HugePages::kOn},
                                                                    {"false", HugePages::kOff},
                                                                    {"true", HugePages::kOn}};
// storage::KnownEvictionPolicies(), in its order (config_test checks).
inline const std::pair<const char*, std::string> kEvictionPolicies[] = {
    {"lru", "lru"}, {"s3fifo", "s3fifo"}, {"tinylfu", "tinylfu"}, {"chain", "chain"}};

template <typename V>
void VisitServer(GrpcConfig& c, V& v) {
  v.Begin("server");
  v.String("grpc_listen", &c.grpc_listen);
  v.Size("max_frame_bytes", &c.max_frame_bytes, {4 * kKiB, kGiB});
  v.Size("send_frame_bytes", &c.send_frame_bytes, {4 * kKiB, kGiB});
  v.Int("max_keys_per_request", &c.max_keys_per_request, {1, 1 << 24});
  v.Int("max_ttl_ms", &c.max_ttl_ms, {0, 30 * kDayMs});
  v.Int("shutdown_grace_ms", &c.shutdown_grace_ms, {0, kDayMs});
  v.Begin("tls");
  v.String("cert_file", &c.tls.cert_file);
  v.String("key_file", &c.tls.key_file);
  v.String("client_ca_file", &c.tls.client_ca_file);
  v.Int("reload_interval_ms", &c.tls.reload_interval_ms, {1000, kDayMs});
  v.End();
  v.End();
}

template <typename V>
void VisitLog(LogConfig& c, V& v) {
  v.Begin("log");
  v.Enum("level", &c.level, Choices<LogLevel>(kLogLevels));
  v.Enum("format", &c.format, Choices<LogFormat>(kLogFormats));
  v.End();
}

template <typename V>
void VisitDram(DramConfig& c, V& v) {
  v.Begin("dram");
  v.Size("capacity_bytes", &c.capacity_bytes, {1});
  v.Size("page_bytes", &c.page_bytes, {4 * kKiB, kGiB, /*power_of_two=*/true});
  v.Enum("huge_pages", &c.huge_pages, Choices<HugePages>(kHugePagesModes));
  v.Bool("prefault", &c.prefault);
  v.Enum("eviction", &c.eviction, Choices<std::string>(kEvictionPolicies));
  v.End();
}

template <typename V>
void VisitNvme(NvmeConfig& c, V& v) {
  v.Begin("nvme");
  v.Bool("enabled", &c.enabled);
  v.String("path", &c.path);
  v.Size("capacity_bytes", &c.capacity_bytes, {kMiB});
  v.Int("demotion_threads", &c.demotion_threads, {1, NvmeConfig::kMaxThreads});
  v.Int("read_threads", &c.read_threads, {1, NvmeConfig::kMaxThreads});
  v.Size("read_bytes_per_s", &c.read_bytes_per_s, {0});
  v.Int("demotion_queue_chunks", &c.demotion_queue_chunks, {1, 1 << 20});
  v.Int("demotion_wait_ms", &c.demotion_wait_ms, {0, kHourMs});
  v.Int("clean_window_percent", &c.clean_window_percent, {0, 100});
  v.Int("flush_interval_ms", &c.flush_interval_ms, {0, kHourMs});
  v.Bool("write_through", &c.write_through);
  v.Bool("sync_writes", &c.sync_writes);
  v.Bool("promote_on_hit", &c.promote_on_hit);
  v.Bool("low_priority_background", &c.low_priority_background);
  v.Enum("eviction", &c.eviction, Choices<std::string>(kEvictionPolicies));
  v.Int("admission_min_hits", &c.admission_min_hits, {0, 1 << 20});
  v.End();
}

template <typename V>
void VisitSessions(storage::ChunkStoreOptions::Sessions& c, V& v) {
  v.Begin("sessions");
  v.Int("idle_timeout_ms", &c.idle_timeout_ms, {1, kDayMs});
  v.Int("max_sessions", &c.max_sessions, {1, 1 << 24});
  v.End();
}

// `overrides` is checked by storage::ParseTenantQuotas (CheckCrossFields).
template <typename V>
void VisitTenants(storage::ChunkStoreOptions::Tenants& c, V& v) {
  v.Begin("tenants");
  v.Size("dram_quota_bytes", &c.dram_quota_bytes, {0});
  v.Size("nvme_quota_bytes", &c.nvme_quota_bytes, {0});
  v.Size("pin_quota_bytes", &c.pin_quota_bytes, {0});
  v.String("overrides", &c.overrides);
  v.End();
}

template <typename V>
void VisitStorage(StorageConfig& c, V& v) {
  v.Begin("storage");
  v.Size("max_chunk_bytes", &c.max_chunk_bytes, {1});
  v.Int("max_lease_ms", &c.max_lease_ms, {0, kDayMs});
  v.Int("index_shards", &c.index_shards, {1, 65536, /*power_of_two=*/true});
  VisitDram(c.dram, v);
  VisitNvme(c.nvme, v);
  VisitSessions(c.sessions, v);
  VisitTenants(c.tenants, v);
  v.End();
}

template <typename V>
void VisitMetrics(MetricsConfig& c, V& v) {
  v.Begin("metrics");
  v.Bool("enabled", &c.enabled);
  v.String("listen", &c.listen);
  v.Bool("namespace_labels", &c.namespace_labels);
  v.Int("max_namespaces", &c.max_namespaces, {1, 100000});
  v.String("bearer_token_file", &c.bearer_token_file);
  v.End();
}

template <typename V>
void VisitUcx(UcxConfig& c, V& v) {
  v.Begin("ucx");
  v.Bool("enabled", &c.enabled);
  v.String("listen", &c.listen);
  v.String("tls", &c.tls);
  v.Size("rndv_thresh_bytes", &c.rndv_thresh_bytes, {0, kGiB});
  v.Size("tcp_segment_bytes", &c.tcp_segment_bytes,
         {ucx_setup::kMinTcpSegmentBytes, ucx_setup::kMaxTcpSegmentBytes});
  v.Int("worker_threads", &c.worker_threads, {1, kMaxThreads});
  v.Bool("direct_access", &c.direct_access);
  v.Bool("trusted_network", &c.trusted_network);
  v.End();
}

template <typename V>
void VisitAuth(AuthConfig& c, V& v) {
  v.Begin("auth");
  v.String("token_file", &c.token_file);
  v.Bool("required", &c.required);
  v.Int("reload_interval_ms", &c.reload_interval_ms, {0, kHourMs});
  v.End();
}

template <typename V>
void VisitCluster(ClusterConfig& c, V& v) {
  v.Begin("cluster");
  v.Bool("enabled", &c.enabled);
  v.String("name", &c.name);
  v.String("etcd_endpoints", &c.etcd_endpoints);
  v.String("etcd_ca_file", &c.etcd_ca_file);
  v.String("etcd_cert_file", &c.etcd_cert_file);
  v.String("etcd_key_file", &c.etcd_key_file);
  v.String("member_id", &c.member_id);
  v.String("advertise_grpc", &c.advertise_grpc);
  v.String("advertise_ucx", &c.advertise_ucx);
  v.String("zone", &c.zone);
  v.Int("lease_ttl_s", &c.lease_ttl_s, {2, 3600});
  v.Int("peer_probe_interval_ms", &c.peer_probe_interval_ms, {0, kHourMs});
  v.String("peer_ca_file", &c.peer_ca_file);
  v.End();
}

}  // namespace config_schema

// Every section and field of `c`, in the order of kDefaultConfigYaml.
template <typename V>
void VisitConfig(ServerConfig& c, V& v) {
  config_schema::VisitServer(c.server, v);
  v.String("data_dir", &c.data_dir);
  config_schema::VisitLog(c.log, v);
  config_schema::VisitStorage(c.storage, v);
  config_schema::VisitMetrics(c.metrics, v);
  config_schema::VisitUcx(c.ucx, v);
  config_schema::VisitAuth(c.auth, v);
  config_schema::VisitCluster(c.cluster, v);
}

// One key of the config with a field's value as EmitConfig writes it (strings unquoted).
struct ConfigEntry {
  std::string key;    // dotted, e.g. "storage.dram.capacity_bytes"
  std::string value;  // e.g. "1GiB", "true", "lru", ""
};
// Every key of `c` in file order.
std::vector<ConfigEntry> ConfigEntries(const ServerConfig& c);

}  // namespace kvstash::server
