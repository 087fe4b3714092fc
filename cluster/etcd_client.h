// EtcdClient: the part of etcd's v3 gRPC API kvstash uses (KV Range/Put/DeleteRange, Lease
// Grant/KeepAlive/Revoke, Watch), over the wire-compatible subset of etcd's messages in
// cluster/etcd_rpc.proto. Several endpoints: a call that finds one unavailable moves to the
// next (round robin); a watch reconnects to the next one itself.
//
// Thread-safety: thread-safe; calls may run concurrently from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/tls_channel.h"

namespace kvstash::cluster {

struct EtcdOptions {
  // Client endpoints, "host:port" (a leading "http://", or "https://" with tls, is
  // accepted). At least one.
  std::vector<std::string> endpoints;
  // Deadline of each unary call (one endpoint's attempt).
  int64_t call_timeout_ms = 2000;
  // TLS to etcd. tls_files.ca verifies etcd's certificate (unset: the system's roots);
  // tls_files.cert and key identify this client to an etcd run with --client-cert-auth.
  // Their setting names appear in error messages.
  bool tls = false;
  TlsChannelFiles tls_files;

  // INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
};

// EtcdOptions from "h1:2379,https://h2:2379" and TLS files: TLS when the endpoints are
// https:// or any file is set. INVALID_ARGUMENT for an empty list or entry, a scheme other
// than http or https, both schemes in one list, or http:// endpoints with a TLS file set.
absl::StatusOr<EtcdOptions> EtcdOptionsFrom(absl::string_view endpoints,
                                            const TlsChannelFiles& tls_files);

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

struct EtcdRange {
  std::vector<EtcdKeyValue> kvs;
  int64_t revision = 0;  // the store's revision the range was read at
};

struct EtcdEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  EtcdKeyValue kv;  // for kDelete only key and mod_revision are set
};

// A running watch; destroying it cancels the watch and waits for its thread.
// REQUIRES: not destroyed from its own on_events / on_error (that is its thread); doing so
// aborts the process with a message saying so.
class EtcdWatch {
 public:
  virtual ~EtcdWatch() = default;
};

class EtcdClient {
 public:
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(const EtcdOptions& options);
  virtual ~EtcdClient() = default;

  // Every key starting with `prefix`, with the revision read at.
  virtual absl::StatusOr<EtcdRange> GetPrefix(absl::string_view prefix) = 0;
  // lease 0: no lease.
  virtual absl::Status Put(absl::string_view key, absl::string_view value, int64_t lease = 0) = 0;
  virtual absl::Status Delete(absl::string_view key) = 0;

  // A new lease of `ttl_s` seconds; returns its id.
  virtual absl::StatusOr<int64_t> GrantLease(int64_t ttl_s) = 0;
  // Refreshes `lease` once; returns the TTL it has now. NOT_FOUND when the lease expired
  // or was revoked (etcd answers TTL <= 0).
  virtual absl::StatusOr<int64_t> KeepAliveOnce(int64_t lease) = 0;
  virtual absl::Status RevokeLease(int64_t lease) = 0;

  // The same calls, ending by `deadline` as well: each endpoint's attempt is cut at the
  // earlier of call_timeout_ms and `deadline`, and no endpoint is tried once it passed
  // (UNAVAILABLE then). Without a deadline a call may take endpoints x call_timeout_ms.
  // These defaults ignore `deadline`, for implementations that do not support one.
  virtual absl::StatusOr<EtcdRange> GetPrefix(absl::string_view prefix, absl::Time deadline) {
    return GetPrefix(prefix);
  }
  virtual absl::Status Put(absl::string_view key, absl::string_view value, int64_t lease,
                           absl::Time deadline) {
    return Put(key, value, lease);
  }
  virtual absl::StatusOr<int64_t> GrantLease(int64_t ttl_s, absl::Time deadline) {
    return GrantLease(ttl_s);
  }
  virtual absl::StatusOr<int64_t> KeepAliveOnce(int64_t lease, absl::Time deadline) {
    return KeepAliveOnce(lease);
  }
  virtual absl::Status RevokeLease(int64_t lease, absl::Time deadline) {
    return RevokeLease(lease);
  }

  // Watches keys starting with `prefix` from `start_revision` (the revision after a
  // GetPrefix). `on_events` gets each batch with the revision it brings the view to;
  // `on_error` is called once when the watch cannot continue from where it was (etcd
  // compacted the revision, or every endpoint failed for longer than `give_up`): the
  // caller then re-reads with GetPrefix and watches again. Both run on the watch's own
  // thread, never concurrently.
  virtual absl::StatusOr<std::unique_ptr<EtcdWatch>> WatchPrefix(
      std::string prefix, int64_t start_revision,
      std::function<void(absl::Span<const EtcdEvent> events, int64_t revision)> on_events,
      std::function<void(const absl::Status& why)> on_error, int64_t give_up_ms = 5000) = 0;
};

}  // namespace kvstash::cluster
