// The daemon's config keys, each declared once: VisitConfig walks every section and field
// of a ServerConfig in file order, naming its YAML key, its kind (string, byte size,
// integer, bool, one of a set of names), its accepted range and its documentation (one
// line of Markdown). Reading (config_parse.cc), `--set` overrides (applied to the YAML
// tree, then read), EmitConfig, the documented default config (DefaultConfigYaml, which
// deploy/kvstashd.yaml is) and README.md's reference table (ConfigReferenceTable) all run
// over it; config_docs_test fails when the checked-in copies drift. A field's default is
// its struct member's initializer (config.h, or the storage option it is).
//
// A visitor V provides (`doc` is the section's or key's documentation; "" for none):
//   void Begin(const char* section, const char* doc);  ...  void End();
//   void String(const char* key, std::string* field, const char* doc);
//   void Size(const char* key, uint64_t* field, SizeRange range, const char* doc);
//   template <typename T> void Int(const char* key, T* field, IntRange range, const char* doc);
//   void Bool(const char* key, bool* field, const char* doc);
//   template <typename T>
//   void Enum(const char* key, T* field, Choices<T> choices, const char* doc);
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
#include "server/config_choices.h"

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

namespace config_schema {

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr int64_t kHourMs = 3600ll * 1000;
constexpr int64_t kDayMs = 24 * kHourMs;
constexpr int kMaxThreads = 64;

using HugePages = storage::ChunkStoreOptions::HugePages;

// storage::KnownEvictionPolicies(), in its order (config_test checks).
inline const std::pair<const char*, std::string> kEvictionPolicies[] = {
    {"lru", "lru"}, {"s3fifo", "s3fifo"}, {"tinylfu", "tinylfu"}, {"chain", "chain"}};

template <typename V>
void VisitServer(GrpcConfig& c, V& v) {
  v.Begin("server", "");
  v.String("grpc_listen", &c.grpc_listen,
           "gRPC listen address (`[::]:7070` for all interfaces, `unix:/path`)");
  v.String(
      "local_socket", &c.local_socket,
      "absolute path of a Unix socket also serving gRPC, without TLS, for clients on this host "
      "(`unix:///path`; engine pods through a hostPath); who may connect is decided by its "
      "directory's mode and by `auth`; beside it, `PATH.arena` hands trusted clients the DRAM "
      "arena to read hits from and write puts into (docs/protocol.md, \"Local arena\"); \"\" for "
      "none");
  v.Size("max_frame_bytes", &c.max_frame_bytes, {4 * kKiB, kGiB},
         "largest payload one Put frame may carry; gRPC receive limit = this + 64 KiB");
  v.Size("send_frame_bytes", &c.send_frame_bytes, {4 * kKiB, kGiB},
         "payload bytes per Get frame (one DRAM page, sent without a copy)");
  v.Int("max_keys_per_request", &c.max_keys_per_request, {1, 1 << 24},
        "most keys per Lookup/Get/Exists/Delete, chunks per Put");
  v.Int("max_ttl_ms", &c.max_ttl_ms, {0, 30 * kDayMs},
        "longest TTL hint a Put may carry (longer: `INVALID_ARGUMENT`); 0 refuses TTL hints");
  v.Int("shutdown_grace_ms", &c.shutdown_grace_ms, {0, kDayMs},
        "how long in-flight calls may run after SIGTERM");
  v.Begin("tls", "gRPC over TLS (docs/security.md); off while cert_file is \"\"");
  v.String("cert_file", &c.tls.cert_file,
           "PEM certificate chain of the daemon; set: gRPC serves TLS only (needs `key_file`; see "
           "[docs/security.md](docs/security.md))");
  v.String("key_file", &c.tls.key_file, "PEM private key of `cert_file` (keep it 0600)");
  v.String("client_ca_file", &c.tls.client_ca_file,
           "PEM CA bundle of client certificates; set: mutual TLS, clients without a certificate "
           "it signed are refused (needs `cert_file`)");
  v.Int("reload_interval_ms", &c.tls.reload_interval_ms, {1000, kDayMs},
        "how often the three files are checked; a renewed key and certificate are served without a "
        "restart (whole seconds)");
  v.End();
  v.End();
}

template <typename V>
void VisitLog(LogConfig& c, V& v) {
  v.Begin("log", "");
  v.Enum("level", &c.level, Choices<LogLevel>(kLogLevels), "`debug`, `info`, `warn`, `error`");
  v.Enum("format", &c.format, Choices<LogFormat>(kLogFormats), "`logfmt` or `json`");
  v.End();
}

template <typename V>
void VisitDram(DramConfig& c, V& v) {
  v.Begin("dram", "");
  v.Size("capacity_bytes", &c.capacity_bytes, {1},
         "hard budget of the DRAM tier, reserved up front");
  v.Size("page_bytes", &c.page_bytes, {4 * kKiB, kGiB, /*power_of_two=*/true},
         "arena page; chunks are lists of pages plus a slab-allocated tail");
  v.Enum("huge_pages", &c.huge_pages, Choices<HugePages>(kHugePagesModes),
         "`off`, `auto` (explicit, then transparent huge pages), `on`");
  v.Bool("prefault", &c.prefault,
         "fault the arena in on a background thread from start, so puts soon stop paying for "
         "page zeroing (the daemon is ready at once; RSS grows meanwhile). Needs Linux 5.14 "
         "(`MADV_POPULATE_WRITE`); older kernels skip it");
  v.Enum("eviction", &c.eviction, Choices<std::string>(kEvictionPolicies),
         "eviction policy of the DRAM tier: `lru`, `s3fifo`, `tinylfu` or `chain` (see [Eviction "
         "policies](#eviction-policies-and-nvme-admission))");
  v.End();
}

template <typename V>
void VisitNvme(NvmeConfig& c, V& v) {
  v.Begin("nvme", "RocksDB tier below DRAM (docs/storage-format.md)");
  v.Bool("enabled", &c.enabled,
         "RocksDB tier below DRAM; `false`: DRAM only, evicted chunks are dropped");
  v.String("path", &c.path,
           "database directory on a local SSD; `\"\"` means `<data_dir>/nvme`; created at "
           "start-up, an existing database is reopened");
  v.Size("capacity_bytes", &c.capacity_bytes, {kMiB},
         "budget of chunk payloads on NVMe (eviction past it in the order of "
         "`storage.nvme.eviction`; writes, demotion included, wait up to 2 s for blob garbage "
         "collection while live plus uncollected payload would pass 1.10x); the directory settles "
         "within ~1.25x. Set it to most of a dedicated SSD in production");
  v.Int("demotion_threads", &c.demotion_threads, {1, NvmeConfig::kMaxThreads},
        "threads writing DRAM evictions to NVMe (1..64)");
  v.Int("read_threads", &c.read_threads, {1, NvmeConfig::kMaxThreads},
        "threads reading NVMe hits for gets (gRPC and UCX), so reads overlap each other and the "
        "sends, and network threads never wait on the disk (1..64)");
  v.Size("read_bytes_per_s", &c.read_bytes_per_s, {0},
         "pace NVMe reads to this many bytes per second, all read threads together (`200MiB` "
         "works; each read waits its size / rate); `0`: unlimited. Makes a fast disk behave as a "
         "slow tier, e.g. to watch clients switch from fetching to recomputing (see [Fetch or "
         "recompute](#fetch-or-recompute))");
  v.Int("demotion_queue_chunks", &c.demotion_queue_chunks, {1, 1 << 20},
        "evictions waiting to be written (also bounded by a quarter of DRAM in bytes); an eviction "
        "that finds it full is dropped (see `demotion_wait_ms`)");
  v.Int("demotion_wait_ms", &c.demotion_wait_ms, {0, kHourMs},
        "longest time a put waits for room in a full demotion queue; after it the evicted chunk is "
        "dropped (`demotion_drops`). `0`: never block a put, drop at once; `> 0`: back-pressure, "
        "puts slow to the pace NVMe absorbs");
  v.Int("clean_window_percent", &c.clean_window_percent, {0, 100},
        "the cleaner writes the coldest chunks of this share of DRAM to NVMe ahead of eviction "
        "(once DRAM is that full), so evicting them costs no write; `0` turns it off");
  v.Int("flush_interval_ms", &c.flush_interval_ms, {0, kHourMs},
        "write-back chunks skip the WAL and are durable once RocksDB flushes them: at the latest "
        "this long after they were written (`0`: only when the memtable fills or at shutdown)");
  v.Bool("write_through", &c.write_through,
         "also write every put to NVMe before acknowledging it (see Durability)");
  v.Bool("sync_writes", &c.sync_writes,
         "fsync the RocksDB WAL on every NVMe write (survives power loss, one fsync per chunk)");
  v.Bool("promote_on_hit", &c.promote_on_hit, "copy a chunk a Get served from NVMe into DRAM");
  v.Bool("low_priority_background", &c.low_priority_background,
         "run demotion, cleaning, garbage collection and RocksDB's flush and compaction threads at "
         "nice 19, so requests get the cores first on a busy host; a put stream that keeps every "
         "core busy then fills the demotion queue sooner (more `demotion_drops`, or longer waits "
         "with `demotion_wait_ms`)");
  v.Enum("eviction", &c.eviction, Choices<std::string>(kEvictionPolicies),
         "eviction policy of the NVMe tier (as `storage.dram.eviction`; `chain` acts as `lru` "
         "there, since chunks on NVMe carry no parent)");
  v.Int("admission_min_hits", &c.admission_min_hits, {0, 1 << 20},
        "NVMe admission: `0` writes every DRAM eviction to NVMe; `N > 0` writes only chunks read "
        "(fetched; a lookup and its fetch count once) at least N times while in DRAM (the cleaner "
        "follows the same rule), sparing SSD writes; others are dropped and counted "
        "(`nvme_admission_declined`). Chunks kept by hints (sessions, pins, TTLs) are always "
        "written");
  v.End();
}

template <typename V>
void VisitSessions(storage::ChunkStoreOptions::Sessions& c, V& v) {
  v.Begin("sessions", "puts and lookups naming a session id (application hints)");
  v.Int("idle_timeout_ms", &c.idle_timeout_ms, {1, kDayMs},
        "a session (a session id on puts and lookups) that no put or lookup names for this long "
        "ends: its chunks become ordinary chunks of their priority. Until then DRAM evicts them "
        "only after every unprotected chunk, and demotes them to NVMe rather than dropping them");
  v.Int("max_sessions", &c.max_sessions, {1, 1 << 24},
        "sessions tracked at once (~100 bytes each); past it the session idle longest ends early");
  v.End();
}

// `overrides` is checked by storage::ParseTenantQuotas (CheckCrossFields).
template <typename V>
void VisitTenants(storage::ChunkStoreOptions::Tenants& c, V& v) {
  v.Begin("tenants", "per-tenant quotas; unregistered namespaces: \"default\"");
  v.Size("dram_quota_bytes", &c.dram_quota_bytes, {0},
         "DRAM payload per tenant (a namespace's tenant; unregistered namespaces count as "
         "`default`); a put past it demotes the tenant's own coldest chunks, so one tenant cannot "
         "evict another's working set (`quota_evictions`). `0`: none");
  v.Size("nvme_quota_bytes", &c.nvme_quota_bytes, {0},
         "NVMe payload per tenant; past it the tenant's own coldest NVMe chunks are evicted "
         "(checked when a put evicts from DRAM, and after each write-through). `0`: none");
  v.Size("pin_quota_bytes", &c.pin_quota_bytes, {0},
         "pinned payload per tenant (pinned chunks are never evicted; all pins together stay "
         "within half of `storage.dram.capacity_bytes`); a pin past it is refused and a put asking "
         "for one is stored unpinned (`pin_quota_refusals`). `0`: no pins");
  v.String("overrides", &c.overrides,
           "quotas of named tenants that differ from the three above: "
           "`TENANT:dram=SIZE,nvme=SIZE,pin=SIZE;TENANT:...` (fields left out keep the defaults)");
  v.End();
}

template <typename V>
void VisitStorage(StorageConfig& c, V& v) {
  v.Begin("storage", "");
  v.Size("max_chunk_bytes", &c.max_chunk_bytes, {1},
         "largest chunk; larger puts get RESOURCE_EXHAUSTED");
  v.Int("max_lease_ms", &c.max_lease_ms, {0, kDayMs},
        "longest lease a Lookup may take (longer ones are clamped)");
  v.Int("index_shards", &c.index_shards, {1, 65536, /*power_of_two=*/true},
        "independently locked index shards (power of two)");
  VisitDram(c.dram, v);
  VisitNvme(c.nvme, v);
  VisitSessions(c.sessions, v);
  VisitTenants(c.tenants, v);
  v.End();
}

template <typename V>
void VisitMetrics(MetricsConfig& c, V& v) {
  v.Begin("metrics", "HTTP endpoint: /metrics, /healthz, /readyz");
  v.Bool(
      "enabled", &c.enabled,
      "serve the HTTP endpoint: `/metrics` (Prometheus text), `/healthz`, `/readyz`, `/listeners` "
      "(the gRPC and UCX addresses, so a client pointed at this port says which one it meant)");
  v.String("listen", &c.listen,
           "HOST:PORT of that endpoint; port 0 picks a free port, reported as `metrics=HOST:PORT` "
           "in `--ready_file`");
  v.Bool("namespace_labels", &c.namespace_labels,
         "also export per-namespace series (`kvstash_namespace_*`, labels `namespace`, `tenant`, "
         "`model`)");
  v.Int("max_namespaces", &c.max_namespaces, {1, 100000},
        "with `namespace_labels`, the most namespaces exported (largest by bytes); "
        "`kvstash_namespaces_omitted` counts the rest");
  v.String("bearer_token_file", &c.bearer_token_file,
           "file holding the token `/metrics` requires as `Authorization: Bearer <token>` (others "
           "get 401; re-read when it changes); `/healthz`, `/readyz` and `/listeners` stay open. "
           "Empty: `/metrics` is open to whoever reaches `metrics.listen`");
  v.End();
}

template <typename V>
void VisitUcx(UcxConfig& c, V& v) {
  v.Begin("ucx", "UCX data plane (docs/protocol.md, \"UCX data plane\")");
  v.Bool("enabled", &c.enabled,
         "serve the UCX data plane (clients connect with `ucx://HOST:PORT`; see "
         "[docs/protocol.md](docs/protocol.md))");
  v.String("listen", &c.listen,
           "HOST:PORT of the UCX listener; port 0 picks a free port, reported as `ucx=HOST:PORT` "
           "in `--ready_file`");
  v.String("tls", &c.tls,
           "UCX transports as `UCX_TLS` takes them (`tcp`, `sm,self`, `rc,sm,self`); empty: the "
           "`UCX_TLS` environment variable, else UCX's choice. `tcp` is added when the list has no "
           "network transport (connection setup needs one). A name UCX cannot use on this host (a "
           "typo, or `rc` without an RDMA device) is refused at start, naming it and the usable "
           "ones (UCX itself would only warn and run on the rest)");
  v.Size("rndv_thresh_bytes", &c.rndv_thresh_bytes, {0, kGiB},
         "payloads from this size go by rendezvous (zero-copy where the transport can); 0: UCX's "
         "default per transport");
  v.Size("tcp_segment_bytes", &c.tcp_segment_bytes,
         {ucx_setup::kMinTcpSegmentBytes, ucx_setup::kMaxTcpSegmentBytes},
         "UCX's TCP receive segment, the largest fragment either side sends over TCP "
         "(`UCX_TCP_RX_SEG_SIZE` in the environment overrides it). Four times UCX's default: 4 MiB "
         "puts over TCP ran ~35% faster on one build host, 4 MiB gets ~35% faster on another "
         "(bench/README). UCX aborts a process that receives a larger fragment, so clients must "
         "set `ClientOptions::ucx_tcp_segment_bytes` to the same value; a client that does not is "
         "refused at connection setup (`FAILED_PRECONDITION`). 16 KiB to 16 MiB");
  v.Int("worker_threads", &c.worker_threads, {1, kMaxThreads},
        "threads each progressing a UCX worker; connections are spread over them");
  v.Bool("direct_access", &c.direct_access,
         "keep the DRAM arena in UCX shared memory that clients on this host map, so they read and "
         "write chunks in place (one copy, made by the client; see \"Direct access\" in "
         "[docs/protocol.md](docs/protocol.md)). Such clients can read and write every namespace's "
         "chunks: with `auth.token_file` set only principals marked `trusted` get the mapping (the "
         "others' clients copy through UCX); without one, turn it off unless the host's UCX "
         "clients are trusted. Needs `/dev/shm` (or SysV shared memory) to hold "
         "`storage.dram.capacity_bytes`; otherwise the daemon logs a warning and keeps a private "
         "arena");
  v.Bool("trusted_network", &c.trusted_network,
         "UCX has no TLS: with `auth.required`, a non-loopback `ucx.listen` is refused at start "
         "unless this says the network reaches only trusted hosts (private RDMA fabric or host "
         "network)");
  v.End();
}

template <typename V>
void VisitAuth(AuthConfig& c, V& v) {
  v.Begin("auth", "bearer tokens and tenant rights (docs/security.md)");
  v.String("token_file", &c.token_file,
           "the token file: SHA-256 digests of bearer tokens, each mapped to a principal and the "
           "tenants it may read, write and administer (see [docs/security.md](docs/security.md)). "
           "Empty: no authentication, every client that reaches a port can read and write every "
           "tenant (logged loudly at start). A file that cannot be read or parsed fails the start");
  v.Bool("required", &c.required,
         "refuse calls that present no token (`UNAUTHENTICATED`). Off: such calls get the file's "
         "`anonymous` principal when it defines one, else every right but direct access "
         "(migration); a presented token must be valid either way. Needs `auth.token_file`");
  v.Int("reload_interval_ms", &c.reload_interval_ms, {0, kHourMs},
        "how often the token file is checked for changes; a change is reloaded once two checks in "
        "a row see it alike, so a file written in place is not read half-written (SIGHUP reloads "
        "at once); 0: only on SIGHUP. A reload that fails keeps the previous tokens");
  v.End();
}

template <typename V>
void VisitCluster(ClusterConfig& c, V& v) {
  v.Begin("cluster", "etcd membership of a multi-node cache (docs/cluster.md)");
  v.Bool("enabled", &c.enabled,
         "register this daemon in etcd as a member of a cluster once its ports are bound, and "
         "withdraw on graceful shutdown (see [docs/cluster.md](docs/cluster.md)); etcd being down "
         "never stops it from serving");
  v.String("name", &c.name,
           "the cluster's name: members live under etcd prefix `/kvstash/<name>`; clients name it "
           "as the path of `etcd://HOST:PORT/<name>`");
  v.String("etcd_endpoints", &c.etcd_endpoints,
           "etcd client endpoints, `host:port,host:port` (`http://` accepted; `https://` for TLS); "
           "required when `cluster.enabled`");
  v.String("etcd_ca_file", &c.etcd_ca_file,
           "TLS to etcd: the CA bundle verifying etcd's certificate; empty: the system's roots. "
           "Any `cluster.etcd_*_file`, or `https://` endpoints, turns TLS on (`http://` with a "
           "file set is refused); the files are read again every 10 s");
  v.String("etcd_cert_file", &c.etcd_cert_file,
           "this daemon's client certificate for an etcd run with `--client-cert-auth`; needs "
           "`cluster.etcd_key_file`");
  v.String("etcd_key_file", &c.etcd_key_file, "the private key of `cluster.etcd_cert_file`");
  v.String("member_id", &c.member_id,
           "this daemon's member id, 1 to 128 of `[A-Za-z0-9._-]`; keep it stable across restarts "
           "so the daemon gets its share of keys (and its NVMe chunks) back. Empty: "
           "`<hostname>-<bound gRPC port>`");
  v.String("advertise_grpc", &c.advertise_grpc,
           "HOST:PORT clients reach gRPC at; empty: the bound listen address, a wildcard host "
           "(`0.0.0.0`, `::`) replaced by the host name");
  v.String(
      "advertise_ucx", &c.advertise_ucx,
      "HOST:PORT clients reach UCX at; empty: as for `advertise_grpc` (nothing when UCX is off)");
  v.String("zone", &c.zone, "free-form failure domain (rack, zone) published with the member");
  v.Int("lease_ttl_s", &c.lease_ttl_s, {2, 3600},
        "seconds a registration outlives a daemon that stops refreshing it (killed, hung, cut off "
        "from etcd); 2 to 3600");
  v.Int("peer_probe_interval_ms", &c.peer_probe_interval_ms, {0, kHourMs},
        "how often the daemon probes every other member's gRPC `Health` "
        "(`kvstash_cluster_peer_up`); 0: no probes");
  v.String("peer_ca_file", &c.peer_ca_file,
           "with `server.tls.*`: the CA bundle verifying the other members' certificates when "
           "probing them; empty: `server.tls.client_ca_file`, else the system's roots. Under "
           "mutual TLS the probes present `server.tls.cert_file`, which must then be issued by a "
           "CA in `server.tls.client_ca_file` and allow client authentication too (extended key "
           "usage `clientAuth` besides `serverAuth`)");
  v.End();
}

}  // namespace config_schema

// Every section and field of `c`, in file order.
template <typename V>
void VisitConfig(ServerConfig& c, V& v) {
  config_schema::VisitServer(c.server, v);
  v.String("data_dir", &c.data_dir, "directory for persistent state");
  config_schema::VisitLog(c.log, v);
  config_schema::VisitStorage(c.storage, v);
  config_schema::VisitMetrics(c.metrics, v);
  config_schema::VisitUcx(c.ucx, v);
  config_schema::VisitAuth(c.auth, v);
  config_schema::VisitCluster(c.cluster, v);
}

// One section or key of the config, with a key's value as EmitConfig writes it.
struct ConfigEntry {
  std::string key;       // dotted, e.g. "storage.dram" (a section), "storage.dram.page_bytes"
  std::string value;     // e.g. "1GiB", "true", "lru", "" (strings unquoted; "" for a section)
  std::string doc;       // the schema's documentation, Markdown
  bool section = false;  // a section: the keys under it follow
  bool quoted = false;   // a string, written in double quotes
};
// Every section and key of `c` in file order.
std::vector<ConfigEntry> ConfigEntries(const ServerConfig& c);
// README.md's configuration reference: a sentence on sizes, then a table row per key
// (key, default, documentation).
std::string ConfigReferenceTable();

}  // namespace kvstash::server
