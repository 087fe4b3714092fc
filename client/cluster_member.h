// MemberConn: one member of a cluster as the cluster client reaches it: a Client of its own
// (connected on first use), the member's circuit breaker, the namespaces registered on it
// and its call counters (Client::Cluster).
//
// Thread-safety: thread-safe. Shared (shared_ptr) by the member table and the calls in
// flight, so a member that leaves the set stays usable until its last call returns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/circuit_breaker.h"
#include "cluster/member.h"
#include "kvstash/client.h"

namespace kvstash::client_internal {

// True when `s` says the member could not be reached or did not answer in time (what
// counts against its breaker), false for an answer, even a refusal.
bool IsMemberFailure(const absl::Status& s);

// The ClientOptions of one member's client: the cluster client's, with the per-member
// deadline, at most one retry, and a connect timeout no longer than that deadline.
ClientOptions MemberClientOptions(const ClientOptions& options);

// "grpc://<grpc_address>", "grpcs://<grpc_address>" or "ucx://<ucx_address>" for
// ClusterOptions::transport; "" when the member publishes no such address.
std::string MemberUri(const cluster::Member& member, absl::string_view transport);

class MemberConn {
 public:
  // Runs once on a fresh connection before any call uses it (registers the memory ranges
  // the cluster client holds); an error fails the connection.
  using InitFn = std::function<absl::Status(Client& client)>;
  // Registers namespace `ns` on `client`; NOT_FOUND when the cluster client has no spec.
  using OpenFn = std::function<absl::Status(Client& client, const Key128& ns)>;
  // Connects a member's client (Client::Connect; tests put in-process fakes behind it).
  using ConnectFn = std::function<absl::StatusOr<std::unique_ptr<Client>>(
      const std::string& uri, const ClientOptions& options)>;

  // A null `connect` means Client::Connect.
  MemberConn(cluster::Member member, const ClientOptions& options, InitFn init, OpenFn open,
             ConnectFn connect = nullptr);

  const cluster::Member& member() const { return member_; }
  const std::string& uri() const { return uri_; }

  // The member's client, connected on first use, with namespace `ns` (when not null)
  // registered on it. UNAVAILABLE without trying while the breaker is open, and
  // DEADLINE_EXCEEDED without trying (nor counting) once `deadline` has passed; a failed
  // connect or registration counts as a failed call, and a connect waits no longer than
  // `deadline`. REQUIRES: every OK is followed by Done with the outcome of the call made
  // with the client.
  absl::StatusOr<Client*> Begin(const Key128* ns, absl::Time deadline = absl::InfiniteFuture());
  // Counts a call made with Begin's client and feeds its outcome to the breaker.
  void Done(const absl::Status& s);
  // The client if connected, without connecting or counting (admin fan-outs use Begin).
  Client* connected();
  // Runs `fn` on the client if connected, after any connect in progress has finished, so a
  // memory range recorded before this call reaches every connection (InitFn or here).
  absl::Status WithConnected(const std::function<absl::Status(Client&)>& fn);
  // Forgets that `ns` is registered (the member lost it, or a caller re-opens it).
  void ForgetNamespace(const Key128& ns);

  // The breaker is open and no probe is due: skip this member (its keys are misses).
  bool Skip() const;
  bool BreakerOpen() const;
  ClusterMemberStatus Status() const;

 private:
  absl::StatusOr<Client*> Connect(absl::Time deadline);

  const cluster::Member member_;
  const std::string uri_;
  const ClientOptions options_;
  const InitFn init_;
  const OpenFn open_;
  const ConnectFn connect_;
  CircuitBreaker breaker_;
  // Held while connecting, so concurrent first calls make one connection.
  absl::Mutex connect_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::unique_ptr<Client> client_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<Key128> namespaces_ ABSL_GUARDED_BY(mu_);
  uint64_t connect_failures_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_connect_error_ ABSL_GUARDED_BY(mu_);
  bool last_ok_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t call_errors_ ABSL_GUARDED_BY(mu_) = 0;
};

using MemberConnPtr = std::shared_ptr<MemberConn>;

}  // namespace kvstash::client_internal
