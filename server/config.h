// The daemon's configuration: one YAML document plus `--set dotted.key=value` overrides.
//
// Every field has its default written in-class below and, identically, in
// kDefaultConfigYaml (a test keeps the two in step). Parsing is strict: an unknown key, a
// value of the wrong type or out of range is refused with a message that names the
// dotted field, e.g.
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
#include "common/ucx_setup.h"
#include "storage/chunk_store.h"

namespace kvstash::server {

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
  // On SIGTERM/SIGINT, how long in-flight calls may run before they are cancelled.
  int64_t shutdown_grace_ms = 10000;
};

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kLogfmt, kJson };

// The `log:` section. Log lines go to stderr.
struct LogConfig {
  // Lines below this level are dropped: debug | info | warn | error.
  LogLevel level = LogLevel::kInfo;
  // logfmt (`ts=... level=info msg="..." k=v`) or json (one object per line).
  LogFormat format = LogFormat::kLogfmt;
};

// The `storage.dram:` section.
struct DramConfig {
  // Hard byte budget of the DRAM tier (reserved up front).
  uint64_t capacity_bytes = 1ull << 30;
  // Allocation granule; a power of two, at least 4 KiB.
  uint64_t page_bytes = 1ull << 20;
  // off | auto | on. auto tries explicit huge pages, then transparent ones, then 4 KiB.
  storage::ChunkStoreOptions::HugePages huge_pages = storage::ChunkStoreOptions::HugePages::kAuto;
  // Fault the whole arena in at start-up (about 0.3 s per GiB), so first puts do not pay
  // for page zeroing and RSS shows the full budget from the start.
  bool prefault = true;
  // Eviction policy: lru.
  std::string eviction = "lru";
};

// The `storage.nvme:` section: the RocksDB tier below DRAM (docs/storage-format.md).
struct NvmeConfig {
  // false: DRAM only; evicted chunks are dropped and nothing is written to disk.
  bool enabled = true;
  // Database directory on a local SSD. Empty: `<data_dir>/nvme`. Created at start-up; an
  // existing database there is reopened and its chunks served again.
  std::string path;
  // Byte budget of chunk payloads on NVMe (least recently used chunks are evicted past
  // it). The directory settles within ~1.25x of it. 16 GiB fits a laptop or CI disk; set
  // it to most of a dedicated SSD in production.
  uint64_t capacity_bytes = 16ull << 30;
  // Background threads writing DRAM evictions to NVMe.
  int demotion_threads = 1;
  // Threads reading NVMe hits for gRPC gets (storage::ChunkStoreOptions::Nvme).
  int read_threads = 4;
  // Evicted chunks waiting to be written; a put that finds the queue full waits.
  int demotion_queue_chunks = 16;
  // Longest wait of a put for room in a full demotion queue; then the evicted chunk is
  // dropped (demotion_drops). 0: drop at once.
  int64_t demotion_wait_ms = 0;
  // Percentage of DRAM (its coldest chunks) the cleaner writes to NVMe ahead of eviction;
  // 0: cleaner off.
  int clean_window_percent = 25;
  // Write-back chunks skip the WAL and are durable once flushed: at the latest this long
  // after being written (0: only when the memtable fills or at shutdown).
  int64_t flush_interval_ms = 1000;
  // Write every put to NVMe before acknowledging it, so it survives kill -9 at once.
  bool write_through = false;
  // fsync the WAL on every NVMe write, so written chunks also survive power loss.
  bool sync_writes = false;
  // Copy a chunk served from NVMe into DRAM.
  bool promote_on_hit = true;
  // Run demotion, cleaning and RocksDB's background threads at nice 19.
  bool low_priority_background = true;
};

// The `storage:` section.
struct StorageConfig {
  // Largest chunk a Put may store; larger chunks are refused with RESOURCE_EXHAUSTED.
  uint64_t max_chunk_bytes = 256ull << 20;
  // Longest lease a Lookup may take; longer requests are clamped to it.
  int64_t max_lease_ms = 60000;
  // Independently locked index shards; a power of two in [1, 65536].
  int index_shards = 64;
  DramConfig dram;
  NvmeConfig nvme;
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
  // write the whole arena, i.e. every namespace: turn this off unless the daemon's
  // same-host UCX clients are trusted (the mapping also needs their user to be allowed
  // to open the daemon's files in /proc, as for CMA). Needs /dev/shm to hold the DRAM
  // budget; the daemon falls back to a private arena (logged) when it cannot.
  bool direct_access = true;
};

struct ServerConfig {
  GrpcConfig server;
  // Directory for persistent state (the NVMe tier under `<data_dir>/nvme` unless
  // storage.nvme.path says otherwise); created at start-up when a tier needs it.
  std::string data_dir = "./var/kvstash";
  LogConfig log;
  StorageConfig storage;
  MetricsConfig metrics;
  UcxConfig ucx;

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

absl::string_view LogLevelName(LogLevel level);
absl::string_view LogFormatName(LogFormat format);
absl::string_view HugePagesName(storage::ChunkStoreOptions::HugePages mode);

}  // namespace kvstash::server
