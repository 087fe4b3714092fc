// Requests: the transport-neutral half of every kvstash call (docs/protocol.md). The gRPC
// handlers and reactors (grpc/) and the UCX handlers (ucx/) decode their wire format, ask this
// layer to admit, resolve, validate, store and fetch, and move the bytes; the rules, the status
// messages, the per-call metrics and the request log live here once.
//
// Thread-safety: Requests is immutable after construction and its pointees are
// thread-safe, so every method may run on any thread. A PutChunk is owned by one thread
// at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.pb.h"
#include "server/auth/principal.h"
#include "server/request_rules.h"
#include "server/service_env.h"
#include "server/transport_metrics.h"
#include "storage/chunk.h"
#include "storage/chunk_store.h"

namespace kvstash::server {

class Requests;

// Who makes a call: the principal its token names, and its place under that principal's
// concurrency limit, held until the last copy of this value is gone (the call's end).
struct CallAuth {
  auth::PrincipalPtr principal;
  std::shared_ptr<const void> slot;  // the limiter's call slot; null when unlimited
};

// One chunk of a Put, from BeginPut to its result. Finish() counts the result (stored,
// already_present or failed) exactly once; destroying an unfinished PutChunk drops the
// reservation and counts nothing (the client went away, or will send the bytes again).
class PutChunk {
 public:
  PutChunk() = default;
  PutChunk(PutChunk&&) = default;
  PutChunk& operator=(PutChunk&&) = default;

  // Where the payload goes; null when the result is decided already (the key is present
  // or the store refused it: drain the payload).
  storage::PendingChunk* pending() const { return pending_.get(); }
  bool already_present() const { return already_present_; }
  // The payload could not be received or written: the chunk fails with `status`.
  void Fail(absl::Status status);
  // Commits the chunk when it is still pending and counts its result. OK when stored or
  // already present; else why it failed.
  absl::Status Finish();

 private:
  friend class Requests;
  TransportMetrics* metrics_ = nullptr;
  storage::ChunkStore* store_ = nullptr;
  std::unique_ptr<storage::PendingChunk> pending_;
  absl::Status status_;
  bool already_present_ = false;
};

// One admitted Get call (Requests::BeginGet): it fetches the call's keys from the store,
// serves each fetched chunk (its bytes charged to the caller's byte rate) and records the
// call in the metrics once, at End. The transport moves the bytes and ends the call when
// its last reply is out (or the call failed). Destroying it records nothing: it may go
// with a store read that finishes after the service is gone.
//
// Thread-safety: every method may run on any thread.
class ActiveGet {
 public:
  ActiveGet(const Requests* requests, CallAuth caller, const Key128& ns, uint64_t lease_id,
            TransportMetrics::Clock::time_point start)
      : requests_(requests),
        caller_(std::move(caller)),
        ns_(ns),
        lease_id_(lease_id),
        start_(start) {}
  ActiveGet(const ActiveGet&) = delete;
  ActiveGet& operator=(const ActiveGet&) = delete;

  // Fetches `key` of the call's namespace, releasing the call's lease on it as it goes.
  // `done` runs on a store read thread, or inline; it must not rely on this object or the
  // service still being there (the call may have ended while the read ran).
  void Fetch(const Key128& key, storage::ChunkStore::GetCallback done) const;
  // The chunk to send for one fetched item, its bytes charged to the caller:
  // RESOURCE_EXHAUSTED past the byte rate (this item fails, the call goes on).
  absl::StatusOr<storage::ChunkRef> Serve(absl::StatusOr<storage::ChunkRef> fetched) const;
  // Records the call with `code`; only the first End counts.
  void End(absl::StatusCode code);

 private:
  const Requests* const requests_;
  const CallAuth caller_;  // holds the caller's call slot until the call is over
  const Key128 ns_;
  const uint64_t lease_id_;
  const TransportMetrics::Clock::time_point start_;
  std::atomic<bool> ended_{false};
};

class Requests {
 public:
  // `env` and `metrics` (this transport's) must outlive the object. `version` is what
  // Health reports.
  Requests(const ServiceEnv* env, TransportMetrics* metrics, std::string version)
      : env_(env), metrics_(metrics), version_(std::move(version)) {}

  const ServiceEnv& env() const { return *env_; }
  TransportMetrics& metrics() const { return *metrics_; }

  // UNAVAILABLE while the daemon drains.
  absl::Status Admit() const { return env_->Admit(); }

  // Authentication and authorization (docs/security.md), the one place both transports
  // use. The principal presenting `token` (empty: none) for a call of `op`, admitted under
  // its limits: UNAUTHENTICATED for a missing (auth.required) or unknown token,
  // RESOURCE_EXHAUSTED past the principal's call rate or concurrency. Counted in the
  // metrics. Health without a token needs nothing (probes carry none): no principal; with
  // one, the token must be valid, and Health is never counted against the limits.
  // `begins_call` false: a later message of a call already admitted (a UCX Put's further
  // chunks), authenticated but not counted against the limits again.
  absl::StatusOr<CallAuth> Authenticate(Op op, absl::string_view token,
                                        bool begins_call = true) const;
  // Only the principal presenting `token`: UNAUTHENTICATED as above, counted.
  absl::StatusOr<auth::PrincipalPtr> Principal(absl::string_view token) const;
  // PERMISSION_DENIED (naming the principal, the right and the tenant) unless `caller`
  // holds `access` on `tenant` (empty: the default tenant).
  absl::Status Authorize(const CallAuth& caller, auth::Access access,
                         absl::string_view tenant) const;
  // RESOURCE_EXHAUSTED when `bytes` more payload exceed the caller's byte rate; the chunk
  // they belong to fails, the call goes on.
  absl::Status ChargeBytes(const CallAuth& caller, uint64_t bytes) const;
  // True when `caller` may map the DRAM arena (direct access): trusted principals only.
  static bool MayMapArena(const CallAuth& caller);
  // The registry's id of the 16-byte namespace id `id`, once `caller` holds `access` on
  // the namespace's tenant.
  absl::StatusOr<Key128> ResolveNamespace(const CallAuth& caller, absl::string_view id,
                                          auth::Access access) const;
  // INVALID_ARGUMENT when `n` keys exceed server.max_keys_per_request.
  absl::Status CheckKeyCount(size_t n) const;
  // Splits concatenated 16-byte keys; INVALID_ARGUMENT for a ragged length or too many.
  absl::StatusOr<std::vector<Key128>> ParseKeys(absl::string_view bytes) const;

  // INVALID_ARGUMENT when a chunk header breaks a rule (key size, size_bytes 0, more
  // chunks than server.max_keys_per_request, a parent key not of 16 bytes, an unknown
  // priority, a TTL above server.max_ttl_ms): the whole call fails.
  absl::Status CheckPutChunk(const PutChunkHeader& header) const;
  // Reserves the chunk in namespace `ns` (resolved for `caller`, who is charged its
  // bytes). REQUIRES: CheckPutChunk(header) is OK.
  PutChunk BeginPut(const CallAuth& caller, const Key128& ns, const PutChunkHeader& header) const;

  // The unary operations of `caller`. Each admits the call (Health answers while draining:
  // that is how a client learns the daemon is going away), checks the caller's rights on
  // the namespace's tenant, and fills the response. Stats needs read on every tenant
  // (its totals are store-wide); ListNamespaces lists the namespaces whose tenant the
  // caller may read; Health needs no right.
  absl::Status Unary(const CallAuth& caller, const v1::RegisterNamespaceRequest& req,
                     v1::RegisterNamespaceResponse* resp) const;
  absl::Status Unary(const CallAuth& caller, const v1::LookupRequest& req,
                     v1::LookupResponse* resp) const;
  absl::Status Unary(const CallAuth& caller, const v1::KeysRequest& req,
                     v1::ExistsResponse* resp) const;
  absl::Status Unary(const CallAuth& caller, const v1::KeysRequest& req,
                     v1::DeleteResponse* resp) const;
  absl::Status Unary(const CallAuth& caller, const v1::StatsRequest& req,
                     v1::StatsResponse* resp) const;
  absl::Status Unary(const CallAuth& caller, const v1::HealthRequest& req,
                     v1::HealthResponse* resp) const;
  // Admin calls: every namespace registered or holding chunks with its usage; deleting a
  // namespace's chunks; pinning a prompt's leading chunks; ending a session.
  absl::Status Unary(const CallAuth& caller, const v1::ListNamespacesRequest& req,
                     v1::ListNamespacesResponse* resp) const;
  absl::Status Unary(const CallAuth& caller, const v1::ClearNamespaceRequest& req,
                     v1::ClearNamespaceResponse* resp) const;
  absl::Status Unary(const CallAuth& caller, const v1::PinRequest& req,
                     v1::PinResponse* resp) const;
  absl::Status Unary(const CallAuth& caller, const v1::EndSessionRequest& req,
                     v1::EndSessionResponse* resp) const;
  // The same for a transport that carries serialized messages: parses `request` as the
  // request of `op` and serializes the response into `*response`. INVALID_ARGUMENT for an
  // unparsable request or an op that is not unary.
  absl::Status Unary(const CallAuth& caller, Op op, absl::string_view request,
                     std::string* response) const;

  // Starts a Get of `key_count` keys of namespace `namespace_id` (16 bytes) under lease
  // `lease_id` (0: none), begun at `start` and admitted already (Admit): the namespace
  // resolved for reading, the key count within server.max_keys_per_request. Both
  // transports start every Get here; a refusal is the transport's to record.
  absl::StatusOr<std::shared_ptr<ActiveGet>> BeginGet(
      const CallAuth& caller, absl::string_view namespace_id, size_t key_count, uint64_t lease_id,
      TransportMetrics::Clock::time_point start) const;

  // One finished call of `op`: its latency since `start` and its outcome.
  void RecordCall(Op op, absl::StatusCode code, TransportMetrics::Clock::time_point start) const {
    metrics_->RecordCall(op, static_cast<int>(code), start);
  }
  // Logs (debug) a call refused with `status`; `peer` may be empty.
  void LogRefused(Op op, const absl::Status& status, absl::string_view peer) const;

 private:
  // A call on keys of one namespace, admitted: the namespace resolved, the keys split.
  struct NamespaceKeys {
    Key128 ns;
    uint32_t chunk_tokens = 0;  // the namespace's
    std::vector<Key128> keys;
  };
  absl::StatusOr<NamespaceKeys> AdmitKeys(const CallAuth& caller, auth::Access access,
                                          const std::string& namespace_id,
                                          absl::string_view keys) const;
  // A call naming one namespace, admitted: the registered namespace's id.
  absl::StatusOr<Key128> AdmitNamespace(const CallAuth& caller, auth::Access access,
                                        const std::string& namespace_id) const;
  // As AdmitNamespace, but also a namespace that is not registered while the store holds
  // chunks of it (e.g. NVMe chunks left by an earlier run, as ListNamespaces shows them):
  // admin calls that only remove data (ClearNamespace) must reach those too.
  absl::StatusOr<Key128> AdmitStoredNamespace(const CallAuth& caller, auth::Access access,
                                              const std::string& namespace_id) const;
  // Authorize for a namespace the store holds: an empty `tenant` (a namespace not bound
  // since the daemon started) needs `access` on every tenant.
  absl::Status AuthorizeStored(const CallAuth& caller, auth::Access access,
                               absl::string_view tenant) const;
  // PERMISSION_DENIED as Authorize says, counted.
  absl::Status Deny(const CallAuth& caller, auth::Access access, absl::string_view tenant) const;

  const ServiceEnv* const env_;
  TransportMetrics* const metrics_;
  const std::string version_;
};

}  // namespace kvstash::server
