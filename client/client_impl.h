// ClientImpl: the transport-independent half of Client. It owns the per-call policy that
// every transport shares: one deadline per call covering all attempts, retries with
// exponential backoff on UNAVAILABLE, transparent re-registration of namespaces the daemon
// forgot (it restarted), payload checksums, and the async executor.
//
// Thread-safety: thread-safe; calls run concurrently on the caller's threads (or the
// executor's for *Async).
#pragma once

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "client/executor.h"
#include "client/transport.h"
#include "common/backoff.h"
#include "kvstash/client.h"

namespace kvstash::client_internal {

class ClientImpl final : public Client {
 public:
  // REQUIRES: options.Validate().ok().
  ClientImpl(TransportPtr transport, const ClientOptions& options);
  ~ClientImpl() override = default;

  absl::StatusOr<NamespaceHandle> OpenNamespace(const Namespace& spec) override;
  absl::StatusOr<LookupResult> Lookup(NamespaceHandle ns, absl::Span<const Key128> keys,
                                      uint32_t lease_ms, uint64_t session_id) override;
  absl::Status Put(NamespaceHandle ns, absl::Span<PutItem> items) override;
  absl::Status Get(NamespaceHandle ns, absl::Span<GetItem> items, uint64_t lease_id) override;
  std::future<absl::Status> PutAsync(NamespaceHandle ns, absl::Span<PutItem> items) override;
  std::future<absl::Status> GetAsync(NamespaceHandle ns, absl::Span<GetItem> items,
                                     uint64_t lease_id) override;
  void RunAsync(std::function<void()> task) override;
  absl::StatusOr<std::vector<ChunkTier>> Exists(NamespaceHandle ns,
                                                absl::Span<const Key128> keys) override;
  absl::StatusOr<uint32_t> Delete(NamespaceHandle ns, absl::Span<const Key128> keys) override;
  absl::StatusOr<ServerStats> Stats(const NamespaceHandle* ns) override;
  absl::StatusOr<HealthInfo> Health() override;
  absl::StatusOr<std::vector<NamespaceUsage>> ListNamespaces() override;
  absl::StatusOr<uint64_t> ClearNamespace(NamespaceHandle ns) override;
  absl::StatusOr<uint32_t> Pin(NamespaceHandle ns, absl::Span<const Key128> keys,
                               bool pin) override;
  absl::Status EndSession(NamespaceHandle ns, uint64_t session_id) override;
  absl::Status RegisterMemory(const void* data, size_t size) override;
  absl::Status UnregisterMemory(const void* data) override;

 private:
  using Attempt = absl::FunctionRef<absl::Status(const CallContext&)>;

  // Run() for a call with a result: `call` makes one attempt.
  template <typename T, typename Call>
  absl::StatusOr<T> RunFor(const Key128* ns, Call call) {
    T result{};
    absl::Status s = Run(ns, [&](const CallContext& ctx) {
      absl::StatusOr<T> r = call(ctx);
      if (r.ok()) result = *std::move(r);
      return r.status();
    });
    if (!s.ok()) return s;
    return result;
  }
  // Runs `attempt` until it succeeds, fails for good, or the call's deadline passes.
  // ns: the namespace the call names, re-registered once if the daemon forgot it.
  absl::Status Run(const Key128* ns, Attempt attempt);
  // Registers the remembered spec of `ns` again; `why` is returned when there is none.
  absl::Status Reregister(const Key128& ns, const CallContext& ctx, const absl::Status& why);
  // Sleeps before the next retry if `s` is retryable and time and retries are left.
  bool BackOffBeforeRetry(const absl::Status& s, const CallContext& ctx, Backoff* backoff);
  void VerifyChecksums(absl::Span<GetItem> items) const;

  const ClientOptions options_;
  TransportPtr transport_;
  absl::Mutex mu_;
  // Every namespace opened through this client, to re-register after a daemon restart.
  absl::flat_hash_map<Key128, Namespace> namespaces_ ABSL_GUARDED_BY(mu_);
  // Starts of the ranges RegisterMemory accepted, so every transport answers an unknown
  // UnregisterMemory the same way.
  absl::flat_hash_set<const void*> registered_ ABSL_GUARDED_BY(mu_);
  // Declared last so it is destroyed first: queued async calls finish while the
  // transport still exists.
  Executor executor_;
};

// True for the daemon's answer to a data call naming a namespace it does not know.
bool IsUnknownNamespace(const absl::Status& s);

}  // namespace kvstash::client_internal
