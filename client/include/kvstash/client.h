// libkvstash_client: put and get KV-cache chunks to and from kvstashd.
//
//   auto client = kvstash::Client::Connect("grpc://127.0.0.1:7070", {});
//   auto ns = (*client)->OpenNamespace(spec);           // registers the namespace
//   auto keys = kvstash::KeyChain(spec).PrefixKeys(tokens);
//   auto hits = (*client)->Lookup(*ns, keys);            // leading chunks present
//   (*client)->Get(*ns, absl::MakeSpan(items));          // into caller buffers
//
// A cluster of daemons (docs/cluster.md) is one Client too: "etcd://host:port[,host:port]/NAME"
// follows the members of cluster NAME registered in etcd, "static://host:port,host:port"
// a fixed list, "dns://name:port" every address a name resolves to (a Kubernetes headless
// Service); ClientOptions::cluster says how chunks are placed on them.
//
// The URI scheme picks the transport: "grpc://host:port" (the daemon's gRPC port),
// "grpcs://host:port" (the same over TLS; ClientOptions::tls_*) or "ucx://host:port" (its
// UCX port, config `ucx.listen`: RDMA, shared memory or TCP as UCX chooses; see
// client/README.md). All serve every call below.
//
// Thread-safety: Client is thread-safe; calls from many threads run concurrently. Caller
// buffers must stay valid until the call (or the async call's future) completes.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kvstash/hints.h"
#include "kvstash/keys.h"
#include "kvstash/stats_counters.h"

namespace kvstash {

// The options of a client (ClientOptions) and of a cluster client (ClusterOptions). Each
// field's meaning and accepted range are in kvstash/client_options_schema.h (and
// client/README.md's option table, generated from it); the initializers here are the
// defaults.

// How a cluster client (an etcd://, static:// or dns:// URI; docs/cluster.md) spreads
// chunks over the daemons and copes with one failing. Every member gets a client of its own
// with the ClientOptions it was given (deadline_ms aside: node_deadline_ms).
struct ClusterOptions {
  std::string transport = "grpc";
  int replicas = 1;
  int hot_fetches = 4;
  int64_t node_deadline_ms = 2000;
  int breaker_failures = 3;
  int64_t breaker_open_ms = 2000;
  int64_t handover_ms = 60000;
  int64_t dns_refresh_ms = 5000;
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;

  // INVALID_ARGUMENT naming the first field outside the schema's range or choices.
  absl::Status Validate() const;
};

struct ClientOptions {
  int64_t deadline_ms = 30000;
  int64_t connect_timeout_ms = 5000;
  int max_retries = 5;
  int64_t initial_backoff_ms = 20;
  int64_t max_backoff_ms = 1000;
  uint32_t frame_bytes = 1u << 20;
  int connections = 1;
  int async_threads = 2;
  bool verify_checksums = false;
  bool checksum_puts = false;
  // gRPC over TLS (docs/security.md, "TLS"): each, when empty, falls back to its
  // KVSTASH_TLS_* environment variable; TLS is on with grpcs://, or with grpc:// when any
  // is given, so a lone key or server name never leaves the channel in plaintext unnoticed.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_server_name;
  std::string ucx_tls;
  bool ucx_direct = true;
  int ucx_copy_threads = 1;
  bool local_direct = true;
  // Well under UCX's keepalive interval (20 s), which sets how fast an idle queue fills.
  int64_t ucx_idle_progress_ms = 1000;
  int64_t ucx_tcp_segment_bytes = 256 << 10;  // the daemon's default
  // Never taken from the URI, so it stays out of logs.
  std::string token;

  // Cluster URIs only (etcd://, static://, dns://).
  ClusterOptions cluster;

  // The token calls present: `token`, else $KVSTASH_TOKEN, else "".
  std::string EffectiveToken() const;

  // INVALID_ARGUMENT naming the first field outside the schema's range or choices (the
  // cluster's included), or an effective token with whitespace or control characters (or
  // over 4096 bytes).
  absl::Status Validate() const;
};

// Tier of a hit, as the daemon reports it.
enum class ChunkTier : uint8_t { kNone = 0, kGpu = 1, kDram = 2, kNvme = 3 };

// The tier's name in the daemon's metrics, `kvstash` output and Python: "gpu", "dram",
// "nvme"; "none" for kNone.
absl::string_view ChunkTierName(ChunkTier tier);
// The tier of that name; kNone for any other name.
ChunkTier ChunkTierFromName(absl::string_view name);

struct LookupResult {
  uint32_t hit_count = 0;        // leading keys present
  std::vector<ChunkTier> tiers;  // one per hit
  uint64_t lease_id = 0;         // pass to Get to release the lease as chunks arrive
};

// One chunk to store. `data` must stay valid until the call completes. REQUIRES: size > 0
// (Put fails with INVALID_ARGUMENT otherwise).
struct PutItem {
  Key128 key{};
  const void* data = nullptr;
  size_t size = 0;
  uint32_t tokens = 0;
  uint32_t format = 0;
  PutHints hints;  // kvstash/hints.h; default: none
  // Out: OK, or why this chunk was not stored. already_present marks an idempotent repeat.
  absl::Status status;
  bool already_present = false;
};

// One chunk to fetch into caller memory.
struct GetItem {
  Key128 key{};
  void* data = nullptr;
  size_t capacity = 0;
  // Out: OK, NOT_FOUND, RESOURCE_EXHAUSTED when the chunk is larger than capacity (size
  // then tells the capacity needed; data is untouched), or DATA_LOSS when
  // verify_checksums found the received bytes differ from the checksum.
  absl::Status status;
  size_t size = 0;
  uint32_t tokens = 0;
  uint32_t format = 0;
  // Out: XXH3-64 of the payload as the daemon recorded it at Put time.
  uint64_t checksum = 0;
};

// One tier's occupancy in the daemon (KVSTASH_TIER_STATS in kvstash/stats_counters.h).
#define KVSTASH_CLIENT_STAT_MEMBER(name, ...) uint64_t name = 0;
struct ServerTierStats {
  ChunkTier tier = ChunkTier::kNone;
  KVSTASH_TIER_STATS(KVSTASH_CLIENT_STAT_MEMBER)
};

// The daemon's counters (kvstash/stats_counters.h); Python's Client.stats() returns them
// under the same names, as `kvstash stats` prints them.
#define KVSTASH_CLIENT_NVME_MEMBER(name, client, ...) uint64_t client = 0;
struct ServerStats {
  // The daemon's totals, or one namespace's counters.
  KVSTASH_STORE_COUNTERS(KVSTASH_CLIENT_STAT_MEMBER)
  // Each tier the daemon runs, fastest first: DRAM, then NVMe when enabled. Daemon-wide
  // even when the stats were asked for one namespace.
  std::vector<ServerTierStats> tiers;
  // The NVMe tier's counters, all zero when the daemon runs DRAM only. Daemon-wide too.
  KVSTASH_NVME_COUNTERS(KVSTASH_CLIENT_NVME_MEMBER)

  // The entry of `tier` in `tiers`: zeros when the daemon does not run it.
  ServerTierStats Of(ChunkTier tier) const;
};
#undef KVSTASH_CLIENT_STAT_MEMBER
#undef KVSTASH_CLIENT_NVME_MEMBER

// A tier's byte budget in a cluster member, as the member registered it.
struct TierCapacity {
  ChunkTier tier = ChunkTier::kNone;
  uint64_t capacity_bytes = 0;
};

// One member of a cluster as a cluster client sees it (Client::Cluster).
struct ClusterMemberStatus {
  std::string id;
  std::string address;  // the address this client connects to (ClusterOptions::transport)
  std::string zone;
  std::vector<TierCapacity> tiers;  // each tier it runs, fastest first
  bool connected = false;           // a client to it exists and its last call succeeded
  bool breaker_open = false;        // calls to it are skipped for now
  uint64_t calls = 0;               // calls made to it by this client
  uint64_t call_errors = 0;         // of which failed (deadline, unavailable, ...)
};

struct ClusterStatus {
  std::vector<ClusterMemberStatus> members;  // sorted by id
  uint64_t member_set_changes = 0;           // member sets received after the first
  uint64_t keys_moved = 0;                   // hand-over lookups made on a previous owner
  bool source_connected = false;             // etcd (or DNS) answered the last time it was asked
};

struct HealthInfo {
  bool serving = false;
  std::string version;
  uint64_t uptime_ms = 0;
};

// A registered namespace: what every data call names.
struct NamespaceHandle {
  Key128 id{};
};

// One tier's share of a namespace: its live chunks there and their payload bytes.
struct TierUsage {
  ChunkTier tier = ChunkTier::kNone;
  uint64_t chunks = 0;
  uint64_t bytes = 0;
};

// One namespace's footprint in the daemon (Client::ListNamespaces).
struct NamespaceUsage {
  Key128 id{};
  // False for a namespace the daemon holds chunks of but no client registered since it
  // started (chunks recovered from NVMe); `spec` is then empty.
  bool registered = false;
  Namespace spec;
  std::string tenant;            // the tenant its chunks count against
  std::vector<TierUsage> tiers;  // each tier holding its chunks, fastest first
  uint64_t pinned_bytes = 0;

  // The entry of `tier` in `tiers`: zeros when the tier holds none of its chunks.
  TierUsage Of(ChunkTier tier) const;
};

class Client {
 public:
  // uri: "grpc://host:port", "grpcs://host:port" or "ucx://host:port". Fails with UNAVAILABLE when
  // the daemon does not answer within connect_timeout_ms, FAILED_PRECONDITION at once when
  // something else answers there (kvstashd's metrics port or its other listener, another gRPC
  // or HTTP server, TLS to a plaintext URI or plaintext to a TLS one; the message names the
  // address, what answered and, when it can tell, the listener meant), INVALID_ARGUMENT for a
  // malformed URI or options. All of it within connect_timeout_ms. A cluster client counts a
  // member whose address answers as something else as an unreachable member.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(absl::string_view uri,
                                                         const ClientOptions& options = {});
  virtual ~Client() = default;

  // Registers `spec` with the daemon (idempotent) and remembers it, so the namespace is
  // registered again transparently after a daemon restart.
  virtual absl::StatusOr<NamespaceHandle> OpenNamespace(const Namespace& spec) = 0;

  // Number of leading `keys` present. lease_ms > 0 protects the hits from eviction until
  // fetched with the returned lease_id or expired. session_id != 0 keeps the session
  // (PutHints::session_id) alive and its hit chain with it.
  virtual absl::StatusOr<LookupResult> Lookup(NamespaceHandle ns, absl::Span<const Key128> keys,
                                              uint32_t lease_ms = 0, uint64_t session_id = 0) = 0;

  // Stores every item in one streamed call. Returns a call-level error (connection,
  // deadline, malformed request) or OK with each item's own status filled in. Storing is
  // idempotent; after a retried call, already_present may be set for chunks that an
  // earlier, interrupted attempt stored.
  virtual absl::Status Put(NamespaceHandle ns, absl::Span<PutItem> items) = 0;
  // Fetches every item in one streamed call; per-item results as for Put.
  virtual absl::Status Get(NamespaceHandle ns, absl::Span<GetItem> items,
                           uint64_t lease_id = 0) = 0;

  // Asynchronous forms: the future resolves once the call is done. `items` and their
  // buffers must outlive the future.
  virtual std::future<absl::Status> PutAsync(NamespaceHandle ns, absl::Span<PutItem> items) = 0;
  virtual std::future<absl::Status> GetAsync(NamespaceHandle ns, absl::Span<GetItem> items,
                                             uint64_t lease_id = 0) = 0;

  // Runs `task` on the threads that run the *Async calls (ClientOptions::async_threads), in
  // submission order per thread, so a caller can build its own asynchronous form of any call
  // (a completion queue, a language binding's futures). Every task submitted runs, also
  // when the client is being destroyed; `task` must not throw.
  virtual void RunAsync(std::function<void()> task) = 0;

  // One byte per key: the ChunkTier it is in, kNone when absent.
  virtual absl::StatusOr<std::vector<ChunkTier>> Exists(NamespaceHandle ns,
                                                        absl::Span<const Key128> keys) = 0;
  // Number of keys deleted.
  virtual absl::StatusOr<uint32_t> Delete(NamespaceHandle ns, absl::Span<const Key128> keys) = 0;

  // Totals; with ns, that namespace's counters (capacity fields stay the tier's).
  virtual absl::StatusOr<ServerStats> Stats(const NamespaceHandle* ns = nullptr) = 0;
  virtual absl::StatusOr<HealthInfo> Health() = 0;

  // Admin calls (docs/protocol.md, "Admin calls"). The defaults answer UNIMPLEMENTED, for
  // Client implementations outside this library.
  //
  // Every namespace the daemon knows (registered, or holding chunks), sorted by id.
  virtual absl::StatusOr<std::vector<NamespaceUsage>> ListNamespaces() {
    return absl::UnimplementedError("ListNamespaces");
  }
  // Deletes every chunk of `ns` in every tier; returns how many were deleted. The
  // namespace stays registered.
  virtual absl::StatusOr<uint64_t> ClearNamespace(NamespaceHandle ns) {
    return absl::UnimplementedError("ClearNamespace");
  }
  // Pins (pin true) or unpins the leading `keys` that are stored, stopping at the first
  // absent one; returns how many changed state. RESOURCE_EXHAUSTED (nothing pinned) when
  // the tenant's pin quota cannot hold them.
  virtual absl::StatusOr<uint32_t> Pin(NamespaceHandle ns, absl::Span<const Key128> keys,
                                       bool pin = true) {
    return absl::UnimplementedError("Pin");
  }
  // Ends session `session_id` (!= 0) of `ns`: its chunks become ordinary chunks of their
  // priority (PutHints::session_id).
  virtual absl::Status EndSession(NamespaceHandle ns, uint64_t session_id) {
    return absl::UnimplementedError("EndSession");
  }

  // The member set and per-member call counters of a cluster client; FAILED_PRECONDITION
  // for a client of one daemon.
  virtual absl::StatusOr<ClusterStatus> Cluster() {
    return absl::FailedPreconditionError("not a cluster client (etcd://, static://, dns://)");
  }

  // Registers [data, data + size) with the transport once, so later Put/Get calls whose
  // buffers lie inside it move bytes without per-call registration (UCX: ucp_mem_map; RDMA
  // transports then read and write the memory directly). Buffers not registered work too.
  // No-op for grpc://. The memory must stay valid until UnregisterMemory(data) and no call
  // may be using it then. INVALID_ARGUMENT for a null or empty range.
  virtual absl::Status RegisterMemory(const void* data, size_t size) {
    return data != nullptr && size > 0 ? absl::OkStatus()
                                       : absl::InvalidArgumentError("empty memory range");
  }
  // Undoes RegisterMemory(data, ...). NOT_FOUND when `data` was not registered.
  virtual absl::Status UnregisterMemory(const void* data) { return absl::OkStatus(); }
};

}  // namespace kvstash
