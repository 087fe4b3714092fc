// The daemon's configuration: one YAML document plus `--set dotted.key=value` overrides.
//
// Every key is declared once, with its range and its documentation, in
// server/config_schema.h; a field's default is its struct member's initializer below (or
// the storage option's it is). The default config file and README.md's reference table are
// generated from them (scripts/config_docs.sh). Parsing is
// strict: an unknown key, a value of the wrong type or out of range is refused with a
// message that names the dotted field, e.g.
//   storage.dram.capacity_bytes: expected a byte size like 4GiB, got "lots"
// because a typo that silently falls back to a default is the worst kind of config bug.
//
// Thread-safety: plain values and stateless functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cluster/etcd_client.h"
#include "common/ucx_setup.h"
#include "server/auth/authenticator.h"
#include "server/log_options.h"
#include "storage/chunk_store.h"

namespace kvstash::server {

// The daemon's sections. Each key's meaning, range and YAML name are in config_schema.h;
// the comments here say only what the code needs beyond them.

// The `server.tls:` section (docs/security.md, "TLS"): the files are checked at start (a
// missing, unreadable or mismatched file fails the start), then watched.
struct TlsConfig {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  int64_t reload_interval_ms = 10000;  // rounded up to whole seconds, gRPC's granularity

  bool enabled() const { return !cert_file.empty(); }
};

// The `server:` section: the gRPC listener and its limits.
struct GrpcConfig {
  std::string grpc_listen = "127.0.0.1:7070";
  // A Unix socket served besides grpc_listen, plaintext (server/local_listener.h); ""
  // for none.
  std::string local_socket;
  // gRPC's receive limit is this plus 64 KiB, so one oversized message cannot make the
  // daemon buffer an unbounded amount.
  uint64_t max_frame_bytes = 4ull << 20;
  uint64_t send_frame_bytes = 1ull << 20;  // one DRAM page: a frame is a page sent in place
  uint32_t max_keys_per_request = 65536;
  int64_t max_ttl_ms = 86400000;
  int64_t shutdown_grace_ms = 10000;
  TlsConfig tls;
};

// The `storage.dram:` section: the store's DRAM options under their config names, with
// storage::ChunkStoreOptions' defaults.
struct DramConfig {
  uint64_t capacity_bytes = storage::ChunkStoreOptions().dram_capacity_bytes;
  uint64_t page_bytes = storage::ChunkStoreOptions().page_bytes;
  storage::ChunkStoreOptions::HugePages huge_pages = storage::ChunkStoreOptions().huge_pages;
  bool prefault = storage::ChunkStoreOptions().prefault_dram;
  std::string eviction = storage::ChunkStoreOptions().dram_eviction;  // dram_eviction
};

// The `storage.nvme:` section: storage::ChunkStoreOptions::Nvme plus `enabled`. Here an
// empty `path` means `<data_dir>/nvme` (ServerConfig::NvmePath()).
struct NvmeConfig : storage::ChunkStoreOptions::Nvme {
  bool enabled = true;
};

// The `storage:` section; the first three are storage::ChunkStoreOptions' fields of the
// same names (max_lease_ms: max_lease).
struct StorageConfig {
  uint64_t max_chunk_bytes = storage::ChunkStoreOptions().max_chunk_bytes;
  int64_t max_lease_ms = absl::ToInt64Milliseconds(storage::ChunkStoreOptions().max_lease);
  int index_shards = storage::ChunkStoreOptions().index_shards;
  DramConfig dram;
  NvmeConfig nvme;
  // `storage.sessions:` and `storage.tenants:` are the store's options as they are.
  storage::ChunkStoreOptions::Sessions sessions;
  storage::ChunkStoreOptions::Tenants tenants;
};

// The `metrics:` section: the HTTP endpoint serving /metrics, /healthz and /readyz.
struct MetricsConfig {
  bool enabled = true;
  std::string listen = "127.0.0.1:7071";
  bool namespace_labels = false;
  uint32_t max_namespaces = 64;
  std::string bearer_token_file;  // checked on every scrape, re-read when it changes
};

// The `ucx:` section: the UCX data-plane listener (docs/protocol.md, "UCX data plane").
struct UcxConfig {
  bool enabled = true;
  std::string listen = "127.0.0.1:7072";
  std::string tls;
  uint64_t rndv_thresh_bytes = 0;
  // ucx_setup::kDefaultTcpSegmentBytes says why 256 KiB.
  uint64_t tcp_segment_bytes = 256 << 10;
  int worker_threads = 1;
  // Mapping also needs the client's user to be allowed to open the daemon's files in /proc,
  // as for CMA.
  bool direct_access = true;
  bool trusted_network = false;
};

// The `cluster:` section: membership in a cluster of daemons that clients treat as one
// cache (docs/cluster.md).
struct ClusterConfig {
  bool enabled = false;
  std::string name = "default";  // etcd prefix: cluster::ClusterPrefix
  std::string etcd_endpoints;
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;
  std::string member_id;
  std::string advertise_grpc;
  std::string advertise_ucx;
  std::string zone;
  int64_t lease_ttl_s = 10;
  int64_t peer_probe_interval_ms = 5000;
  std::string peer_ca_file;

  // The etcd client's options from the fields above; INVALID_ARGUMENT naming the field.
  absl::StatusOr<cluster::EtcdOptions> Etcd() const;
};

// The `auth:` section: bearer tokens and per-tenant rights (docs/security.md); the
// authenticator's options (auth::AuthOptions).
struct AuthConfig : auth::AuthOptions {};

struct ServerConfig {
  GrpcConfig server;
  std::string data_dir = "./var/kvstash";
  LogConfig log;
  StorageConfig storage;
  MetricsConfig metrics;
  UcxConfig ucx;
  AuthConfig auth;
  ClusterConfig cluster;

  // The store's options; nvme.path is resolved (empty when the NVMe tier is disabled).
  storage::ChunkStoreOptions ToChunkStoreOptions() const;
  // Directory of the NVMe tier, or "" when it is disabled.
  std::string NvmePath() const;
};

// One `--set` override: a dotted key path and a value.
struct ConfigOverride {
  std::string key;       // e.g. "storage.dram.capacity_bytes"
  std::string value;     // e.g. "8GiB"; parsed as YAML (so `[a, b]` is a list) unless literal
  bool literal = false;  // take `value` as a plain string ("[::]:7070" is an address)
};

// With `auth_required`, an enabled UCX listener on a non-loopback address needs
// ucx.trusted_network (UCX carries tokens unencrypted). FAILED_PRECONDITION saying so.
absl::Status CheckUcxTrust(const UcxConfig& ucx, bool auth_required);
// Whether HOST of "HOST:PORT" is a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLoopbackHostPort(absl::string_view host_port);

// The names of the huge-page modes; the first name of a mode is the one written back.
// true/false are accepted because YAML users write them for on/off out of habit.
inline const std::pair<const char*, storage::HugePages> kHugePagesModes[] = {
    {"off", storage::HugePages::kOff},
    {"auto", storage::HugePages::kAuto},
    {"on", storage::HugePages::kOn},
    {"false", storage::HugePages::kOff},
    {"true", storage::HugePages::kOn}};
absl::string_view HugePagesName(storage::ChunkStoreOptions::HugePages mode);

// `s` with its message prefixed by "<field>: " (INVALID_ARGUMENT); OK stays OK.
absl::Status InField(absl::string_view field, const absl::Status& s);

}  // namespace kvstash::server
