// The daemon's configuration: one YAML document plus `--set dotted.key=value` overrides.
//
// Every key is declared once, in server/config_schema.h; a field's default and its
// documentation sit on its struct member below (or on the storage option it is), and
// kDefaultConfigYaml and README.md's reference table are tested against them. Parsing is
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

// The `server.tls:` section: TLS on the gRPC listener (docs/security.md, "TLS"). Off while
// cert_file is empty; the files are PEM and are checked at start (a missing, unreadable or
// mismatched file fails the start), then watched, so a renewed certificate is served
// without a restart.
struct TlsConfig {
  // The daemon's certificate chain (leaf first). Set: gRPC serves TLS only; plaintext
  // clients fail their handshake. Requires key_file.
  std::string cert_file;
  // The private key of cert_file's leaf certificate. Keep it 0600, owned by the daemon.
  std::string key_file;
  // CA bundle that signs client certificates. Set: mutual TLS, every client must present
  // a certificate this CA signed. Requires cert_file.
  std::string client_ca_file;
  // How often the three files are checked for a new certificate (rounded up to whole
  // seconds, gRPC's granularity). Renew by renaming the new key, then the new
  // certificate, into place; new connections get them after the next check.
  int64_t reload_interval_ms = 10000;

  bool enabled() const { return !cert_file.empty(); }
};

// The `server:` section: the gRPC listener and its limits.
struct GrpcConfig {
  // HOST:PORT to listen on ("[::]:7070" for every interface, port 0 picks a free port), or
  // "unix:/path" for a Unix socket.
  std::string grpc_listen = "127.0.0.1:7070";
  // Largest payload one Put frame may carry. gRPC's receive limit is set to this plus
  // 64 KiB (room for the frame's other fields), so one oversized message cannot make the
  // daemon buffer an unbounded amount.
  uint64_t max_frame_bytes = 4ull << 20;
  // Payload bytes per Get frame. 1 MiB matches the DRAM page size, so a frame is one page
  // referenced in place. Must not exceed max_frame_bytes.
  uint64_t send_frame_bytes = 1ull << 20;
  // Most keys one Lookup/Get/Exists/Delete request may name, and most chunks per Put call.
  uint32_t max_keys_per_request = 65536;
  // Longest TTL hint a Put may carry (docs/protocol.md, "Hints"); a longer one fails the
  // call with INVALID_ARGUMENT rather than keep a chunk longer than the operator allows.
  int64_t max_ttl_ms = 86400000;
  // On SIGTERM/SIGINT, how long in-flight calls may run before they are cancelled.
  int64_t shutdown_grace_ms = 10000;
  TlsConfig tls;
};

// The `storage.dram:` section: the store's DRAM options under their config names; their
// defaults and documentation are storage::ChunkStoreOptions' (named on each line).
struct DramConfig {
  uint64_t capacity_bytes = storage::ChunkStoreOptions().dram_capacity_bytes;
  uint64_t page_bytes = storage::ChunkStoreOptions().page_bytes;
  storage::ChunkStoreOptions::HugePages huge_pages = storage::ChunkStoreOptions().huge_pages;
  bool prefault = storage::ChunkStoreOptions().prefault_dram;
  std::string eviction = storage::ChunkStoreOptions().dram_eviction;  // dram_eviction
};

// The `storage.nvme:` section: the RocksDB tier below DRAM (docs/storage-format.md), i.e.
// storage::ChunkStoreOptions::Nvme (defaults and documentation there) plus `enabled`. Here
// an empty `path` means `<data_dir>/nvme` (ServerConfig::NvmePath()).
struct NvmeConfig : storage::ChunkStoreOptions::Nvme {
  // false: DRAM only; evicted chunks are dropped and nothing is written to disk.
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
  // Serve the endpoint at all. Off: no HTTP listener (and no metrics= line in the ready
  // file); the metric cells are still updated, at the cost of a few atomic adds per call.
  bool enabled = true;
  // HOST:PORT of the endpoint ("0.0.0.0:7071" for every interface, port 0 picks a free
  // port, reported in the ready file as `metrics=HOST:PORT`).
  std::string listen = "127.0.0.1:7071";
  // Add per-namespace series (labels namespace, tenant, model). Off by default: each
  // namespace adds a handful of series, and Prometheus pays for every one.
  bool namespace_labels = false;
  // With namespace_labels, export at most this many namespaces (the largest by bytes);
  // kvstash_namespaces_omitted counts the rest.
  uint32_t max_namespaces = 64;
  // File holding the bearer token /metrics requires (`Authorization: Bearer <token>`;
  // surrounding whitespace ignored); others get 401. /healthz and /readyz stay open for
  // probes. The file is checked on every scrape and re-read when it changes. Empty: /metrics
  // is open to whoever reaches `listen` (keep that on loopback).
  std::string bearer_token_file;
};

// The `ucx:` section: the UCX data-plane listener (docs/protocol.md, "UCX data plane").
// Put, Get and Lookup (and the other calls) over UCX active messages, with payloads moved
// by UCX rendezvous: RDMA on IB/RoCE hosts, shared memory on one host, TCP elsewhere.
struct UcxConfig {
  // Start the UCX listener. Off: gRPC only (no ucx= line in the ready file).
  bool enabled = true;
  // HOST:PORT of the UCX listener ("0.0.0.0:7072" for every interface, port 0 picks a free
  // port, reported in the ready file as `ucx=HOST:PORT`).
  std::string listen = "127.0.0.1:7072";
  // UCX transports, as UCX_TLS takes them ("tcp", "sm,self", "rc,sm,self"). Empty: the
  // UCX_TLS environment variable, or UCX's own choice when that is unset.
  std::string tls;
  // Payloads at least this large go by rendezvous (zero-copy where the transport can);
  // smaller ones are copied through eager messages. 0: UCX's per-transport default.
  uint64_t rndv_thresh_bytes = 0;
  // UCX's TCP receive segment (UCX_TCP_RX_SEG_SIZE; that variable, when set, wins): the
  // largest fragment a peer may send over TCP. UCX aborts a process that receives a larger
  // one, so clients must use the same value (ClientOptions::ucx_tcp_segment_bytes); one
  // that does not is refused at connection setup. 16 KiB to 16 MiB; default 256 KiB
  // (ucx_setup::kDefaultTcpSegmentBytes says why).
  uint64_t tcp_segment_bytes = 256 << 10;
  // Threads, each progressing its own UCX worker; connections are spread over them. One
  // is enough for a few clients on a small host; add threads for many busy clients.
  int worker_threads = 1;
  // Keep the DRAM arena in UCX shared memory and let clients on this host map it, so they
  // read and write chunks in place: one copy per byte instead of two through UCX's
  // shared-memory queue (docs/protocol.md, "Direct access"). Such clients can read and
  // write the whole arena, i.e. every namespace: with auth.token_file only principals
  // marked trusted get it; without one, turn this off unless the daemon's
  // same-host UCX clients are trusted (the mapping also needs their user to be allowed
  // to open the daemon's files in /proc, as for CMA). Needs /dev/shm to hold the DRAM
  // budget; the daemon falls back to a private arena (logged) when it cannot.
  bool direct_access = true;
  // UCX has no TLS: tokens and chunks cross the network in the clear. With authentication
  // required, a non-loopback `listen` is refused at start unless this says the network is
  // private to trusted hosts (an RDMA fabric, a host-only or isolated cluster network).
  bool trusted_network = false;
};

// The `cluster:` section: membership in a cluster of daemons that clients treat as one
// cache (docs/cluster.md). With `enabled`, the daemon registers itself in etcd under a
// lease once its ports are bound and withdraws on graceful shutdown; etcd being down never
// stops it from serving.
struct ClusterConfig {
  bool enabled = false;
  // The cluster's name: its members live under etcd prefix /kvstash/<name>
  // (cluster::ClusterPrefix); clients name it as the path of an etcd:// URI.
  std::string name = "default";
  // etcd client endpoints, "host:port,host:port" or "https://host:port,..." (TLS).
  // Required when enabled.
  std::string etcd_endpoints;
  // TLS to etcd: a CA bundle verifying etcd's certificate ("" = the system's roots), and
  // this daemon's client certificate and key for an etcd run with --client-cert-auth. Any
  // set, or https:// endpoints, turns TLS on. The files are read again every 10 s.
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;
  // This daemon's id in the cluster; keep it stable across restarts so the daemon gets its
  // share of the keys (and its NVMe chunks) back. Empty: "<hostname>-<bound gRPC port>".
  std::string member_id;
  // HOST:PORT clients reach the gRPC and UCX listeners at. Empty: the bound listen address,
  // with a wildcard host (0.0.0.0, ::) replaced by this host's name.
  std::string advertise_grpc;
  std::string advertise_ucx;
  // Free-form failure domain (rack, zone) published with the member; empty: none.
  std::string zone;
  // Seconds the registration outlives a daemon that stops refreshing it (killed, hung,
  // cut off from etcd): how long clients may still send it calls after a crash.
  int64_t lease_ttl_s = 10;
  // How often each other member's gRPC Health is probed (kvstash_cluster_peer_up);
  // 0: no probes.
  int64_t peer_probe_interval_ms = 5000;
  // CA bundle verifying the other members' certificates when gRPC serves TLS; "" =
  // server.tls.client_ca_file, else the system's roots. Under mutual TLS the probes present
  // server.tls.cert_file, which must then be issued by a CA in server.tls.client_ca_file and
  // allow client authentication too.
  std::string peer_ca_file;

  // The etcd client's options from the fields above; INVALID_ARGUMENT naming the field.
  absl::StatusOr<cluster::EtcdOptions> Etcd() const;
};

// The `auth:` section: bearer tokens and per-tenant rights (docs/security.md). Its fields
// are the authenticator's options, documented there (auth::AuthOptions).
struct AuthConfig : auth::AuthOptions {};

struct ServerConfig {
  GrpcConfig server;
  // Directory for persistent state (the NVMe tier under `<data_dir>/nvme` unless
  // storage.nvme.path says otherwise); created at start-up when a tier needs it.
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

// The configuration used when no --config file is given. Parses to ServerConfig{}.
extern const char kDefaultConfigYaml[];

// One `--set` override: a dotted key path and a value.
struct ConfigOverride {
  std::string key;       // e.g. "storage.dram.capacity_bytes"
  std::string value;     // e.g. "8GiB"; parsed as YAML (so `[a, b]` is a list) unless literal
  bool literal = false;  // take `value` as a plain string ("[::]:7070" is an address)
};

// Parses `yaml` (empty = all defaults), applies `overrides` in order, then validates.
// INVALID_ARGUMENT names the offending field.
absl::StatusOr<ServerConfig> ParseConfig(absl::string_view yaml,
                                         const std::vector<ConfigOverride>& overrides);
// Reads `path` and parses it as above. NOT_FOUND / INVALID_ARGUMENT name the file.
absl::StatusOr<ServerConfig> LoadConfigFile(const std::string& path,
                                            const std::vector<ConfigOverride>& overrides);

// The effective configuration as YAML; ParseConfig(EmitConfig(c), {}) yields `c` again.
std::string EmitConfig(const ServerConfig& config);

// With `auth_required`, an enabled UCX listener on a non-loopback address needs
// ucx.trusted_network (UCX carries tokens unencrypted). FAILED_PRECONDITION saying so.
absl::Status CheckUcxTrust(const UcxConfig& ucx, bool auth_required);
// Whether HOST of "HOST:PORT" is a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLoopbackHostPort(absl::string_view host_port);

absl::string_view HugePagesName(storage::ChunkStoreOptions::HugePages mode);

}  // namespace kvstash::server
