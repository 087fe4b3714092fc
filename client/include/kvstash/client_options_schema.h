// The client's options, each declared once: VisitClientOptions walks every ClientOptions
// field (and, in section "cluster", every ClusterOptions field) naming it, its kind, its
// accepted range and its documentation (one line of Markdown). ClientOptions::Validate
// and ClusterOptions::Validate, SetClientOption (the `kvstash` tool's `--set`), the Python
// package's keyword arguments and client/README.md's option table all run over it. A
// field's default is its struct member's initializer (kvstash/client.h).
//
// A visitor V provides (`doc` is the field's documentation):
//   void Begin(const char* section, const char* doc);  ...  void End();
//   template <typename T> void Int(const char* name, T* field, OptionRange range,
//                                  const char* doc);
//   void Bool(const char* name, bool* field, const char* doc);
//   void String(const char* name, std::string* field, const char* doc);
//   void Choice(const char* name, std::string* field, OptionChoices choices, const char* doc);
//
// Thread-safety: stateless templates and functions of their arguments.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kvstash/client.h"

namespace kvstash {

// Accepted values of an integer option: [min, max].
struct OptionRange {
  int64_t min = 0;
  int64_t max = std::numeric_limits<int64_t>::max();
};
// The values a string option accepts.
using OptionChoices = absl::Span<const char* const>;

// The sections a visitor is in, for visitors that name a field by its dotted path
// ("cluster.replicas"). A visitor derives from it; one that handles Begin itself calls
// OptionSections::Begin too.
class OptionSections {
 public:
  void Begin(const char* section, const char* /*doc*/) { open_.push_back(section); }
  void End() { open_.pop_back(); }

 protected:
  std::string Dotted(const char* name) const {
    std::string out;
    for (const std::string& s : open_) out.append(s).append(".");
    return out.append(name);
  }
  const std::vector<std::string>& open() const { return open_; }

 private:
  std::vector<std::string> open_;
};

namespace client_options_schema {

constexpr int64_t kKiB = 1 << 10;
constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kMaxThreadsOrConnections = 256;
inline constexpr const char* kTransports[] = {"grpc", "grpcs", "ucx"};

template <typename V>
void VisitCluster(ClusterOptions& o, V& v) {
  v.Choice("transport", &o.transport, OptionChoices(kTransports),
           "which address of each member to connect to: `grpc`, `grpcs` (gRPC over TLS, with "
           "the `tls_*` options) or `ucx` (the `ucx_*` options apply)");
  v.Int("replicas", &o.replicas, {1, 8},
        "copies of each hot chunk (put with priority high or pin, or fetched `hot_fetches` "
        "times, then copied to the missing replicas); 1: no copies. A lookup or get asks the "
        "next copy when an owner fails");
  v.Int("hot_fetches", &o.hot_fetches, {0, 1000000},
        "fetches of one chunk through this client after which it counts as hot; 0: only hints "
        "make a chunk hot");
  v.Int("node_deadline_ms", &o.node_deadline_ms, {1},
        "deadline of one call to one member, retries included: a slower member counts as "
        "failed for that call, and its keys as misses");
  v.Int("breaker_failures", &o.breaker_failures, {1, std::numeric_limits<int>::max()},
        "consecutive failed calls to a member after which its circuit breaker opens: its keys "
        "are misses at once for `breaker_open_ms`, then one call probes it");
  v.Int("breaker_open_ms", &o.breaker_open_ms, {1}, "how long an open breaker skips its member");
  v.Int("handover_ms", &o.handover_ms, {0},
        "after the member set changes, a key whose owner changed and misses on its new owner is "
        "also looked up on its previous owner for this long (and copied over as fetched); 0: "
        "no hand-over");
  v.Int("dns_refresh_ms", &o.dns_refresh_ms, {1},
        "`dns://` only: how often the name is resolved again");
  v.String("etcd_ca_file", &o.etcd_ca_file,
           "`etcd://` only, TLS to etcd: CA bundle verifying etcd's certificate; empty: the "
           "system's roots. Any `etcd_*` file, or `etcds://`, turns TLS on");
  v.String("etcd_cert_file", &o.etcd_cert_file,
           "client certificate for an etcd run with `--client-cert-auth`");
  v.String("etcd_key_file", &o.etcd_key_file, "the private key of `etcd_cert_file`");
}

}  // namespace client_options_schema

// Every ClusterOptions field, in declaration order.
template <typename V>
void VisitClusterOptions(ClusterOptions& o, V& v) {
  client_options_schema::VisitCluster(o, v);
}

// Every ClientOptions field, in declaration order; ClusterOptions' in section "cluster".
template <typename V>
void VisitClientOptions(ClientOptions& o, V& v) {
  using client_options_schema::kKiB;
  using client_options_schema::kMaxThreadsOrConnections;
  using client_options_schema::kMiB;
  v.Int("deadline_ms", &o.deadline_ms, {1}, "deadline of each call, retries included");
  v.Int("connect_timeout_ms", &o.connect_timeout_ms, {1},
        "how long `Connect` waits for the daemon to answer a health check");
  v.Int("max_retries", &o.max_retries, {0, 100},
        "retries of a call that failed with `UNAVAILABLE` (daemon restarting, connection lost), "
        "with exponential backoff from `initial_backoff_ms` up to `max_backoff_ms`");
  v.Int("initial_backoff_ms", &o.initial_backoff_ms, {1}, "the first retry's backoff");
  v.Int("max_backoff_ms", &o.max_backoff_ms, {o.initial_backoff_ms},
        "the longest backoff (at least `initial_backoff_ms`)");
  v.Int("frame_bytes", &o.frame_bytes, {kKiB, 64 * kMiB},
        "payload bytes per wire frame; must not exceed the daemon's `server.max_frame_bytes`");
  v.Int("connections", &o.connections, {1, kMaxThreadsOrConnections},
        "connections to the daemon; calls are spread over them, so concurrent large transfers "
        "proceed in parallel");
  v.Int("async_threads", &o.async_threads, {1, kMaxThreadsOrConnections},
        "threads that run the `*Async` calls");
  v.Bool("verify_checksums", &o.verify_checksums,
         "verify the XXH3-64 checksum of every chunk a get receives (one pass over it); a "
         "mismatch fails the item with `DATA_LOSS`");
  v.Bool("checksum_puts", &o.checksum_puts,
         "hash every put payload here and have the daemon verify its copy against it, so "
         "corruption between this buffer and the daemon's memory fails the chunk with "
         "`DATA_LOSS`. Off: the daemon computes the checksum while it copies the payload");
  v.String("tls_ca_file", &o.tls_ca_file,
           "gRPC over TLS: PEM file of the CA that signed the daemon's certificate (else "
           "`KVSTASH_TLS_CA`, else the system's CA store). Any `tls_*` option turns TLS on for "
           "`grpc://`; `ucx://` refuses them");
  v.String("tls_cert_file", &o.tls_cert_file,
           "mutual TLS: this client's PEM certificate chain (else `KVSTASH_TLS_CERT`); needs "
           "`tls_key_file`");
  v.String("tls_key_file", &o.tls_key_file,
           "mutual TLS: the private key of `tls_cert_file` (else `KVSTASH_TLS_KEY`)");
  v.String("tls_server_name", &o.tls_server_name,
           "the name the daemon's certificate must carry when it is not the URI's host (else "
           "`KVSTASH_TLS_SERVER_NAME`)");
  v.String("ucx_tls", &o.ucx_tls,
           "`ucx://` only: the UCX transports this client may use, as `UCX_TLS` takes them "
           "(`tcp`, `sm,self`, `rc,sm,self`); empty: `UCX_TLS`, else UCX's choice. A name UCX "
           "cannot use on this host fails `Connect`");
  v.Bool("ucx_direct", &o.ucx_direct,
         "`ucx://` only: when the daemon shares its DRAM arena (`ucx.direct_access`) and this "
         "process can map it, read and write chunks of 256 KiB and more in it directly (one "
         "copy, by this process)");
  v.Int("ucx_copy_threads", &o.ucx_copy_threads, {0, 16},
        "`ucx://` with `ucx_direct`, `unix://` with `local_direct`: helper threads that share "
        "direct copies with the calling thread once a call's copies (a `ucx://` put's: a "
        "chunk's) add up to 1 MiB; 0: the caller copies alone");
  v.Bool("local_direct", &o.local_direct,
         "`unix://` only: when the daemon serves its local arena socket and this client's "
         "principal is trusted, read hits straight from the daemon's DRAM arena and write puts "
         "straight into it (one copy, by this process; docs/protocol.md, \"Local arena\")");
  v.Int("ucx_idle_progress_ms", &o.ucx_idle_progress_ms, {0, 10000},
        "`ucx://` only: how often a background thread handles what the daemon sent idle "
        "connections (UCX keepalives), so their receive queues never fill; 0: no thread");
  v.Int("ucx_tcp_segment_bytes", &o.ucx_tcp_segment_bytes, {16 * kKiB, 16 * kMiB},
        "`ucx://` over TCP: UCX's TCP receive segment (`UCX_TCP_RX_SEG_SIZE` wins when set); "
        "must equal the daemon's `ucx.tcp_segment_bytes`, else `Connect` fails with "
        "`FAILED_PRECONDITION`");
  v.String("token", &o.token,
           "the bearer token every call presents (docs/security.md); empty: `KVSTASH_TOKEN`, "
           "else none. At most 4096 bytes, no whitespace or control characters");
  v.Begin("cluster",
          "cluster URIs only (`etcd://`, `static://`, `dns://`; docs/cluster.md): how chunks "
          "are spread over the members");
  VisitClusterOptions(o.cluster, v);
  v.End();
}

// Sets option `name` ("deadline_ms", "cluster.replicas") from its text: a number, `true` or
// `false`, or a string as it is. INVALID_ARGUMENT for an unknown name or a value of the
// wrong kind; ranges are left to Validate.
absl::Status SetClientOption(ClientOptions* options, absl::string_view name,
                             absl::string_view value);

// client/README.md's option table: a row per option (name, default, documentation).
std::string ClientOptionsTable();

}  // namespace kvstash
