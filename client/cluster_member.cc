#include "client/cluster_member.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/listener_probe.h"

namespace kvstash::client_internal {

bool IsMemberFailure(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsCancelled(s) ||
         absl::IsAborted(s) || absl::IsUnknown(s) || absl::IsInternal(s);
}

ClientOptions MemberClientOptions(const ClientOptions& options) {
  ClientOptions out = options;
  out.deadline_ms = options.cluster.node_deadline_ms;
  out.connect_timeout_ms = std::min(options.connect_timeout_ms, options.cluster.node_deadline_ms);
  // One quick retry rides out a dropped connection; more would only delay the miss.
  out.max_retries = std::min(options.max_retries, 1);
  // The cluster client runs the *Async calls itself.
  out.async_threads = 1;
  return out;
}

std::string MemberUri(const cluster::Member& member, absl::string_view transport) {
  const std::string& address = transport == "ucx" ? member.ucx_address : member.grpc_address;
  if (address.empty()) return "";
  return absl::StrCat(transport, "://", address);
}

MemberConn::MemberConn(cluster::Member member, const ClientOptions& options, InitFn init,
                       OpenFn open, ConnectFn connect)
    : member_(std::move(member)),
      uri_(MemberUri(member_, options.cluster.transport)),
      options_(MemberClientOptions(options)),
      init_(std::move(init)),
      open_(std::move(open)),
      connect_(connect != nullptr ? std::move(connect)
                                  : [](const std::string& uri,
                                       const ClientOptions& o) { return Client::Connect(uri, o); }),
      breaker_({.failures = options.cluster.breaker_failures,
                .open_ms = options.cluster.breaker_open_ms}) {}

absl::StatusOr<Client*> MemberConn::Connect(absl::Time deadline) {
  uint64_t failures_seen;
  {
    absl::MutexLock lock(&mu_);
    if (client_ != nullptr) return client_.get();
    failures_seen = connect_failures_;
  }
  absl::MutexLock connect_lock(&connect_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (client_ != nullptr) return client_.get();
    // A connect that failed while this caller waited answers for it too: callers queued
    // behind a dead member must not each wait out a connect timeout of their own.
    if (connect_failures_ != failures_seen) return last_connect_error_;
  }
  // The connect waits no longer than what is left of the cluster call's time.
  ClientOptions options = options_;
  const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
  options.connect_timeout_ms = std::max<int64_t>(1, std::min(options.connect_timeout_ms, left_ms));
  absl::StatusOr<std::unique_ptr<Client>> client =
      uri_.empty()
          ? absl::UnavailableError(absl::StrCat("cluster member ", member_.id, " publishes no ",
                                                options_.cluster.transport, " address"))
          : connect_(uri_, options);
  absl::Status s = client.status();
  // A member address that answers as something else is that member's failure: the others
  // still serve.
  if (IsWrongListener(s)) {
    s = absl::UnavailableError(absl::StrCat("cluster member ", member_.id, ": ", s.message()));
  }
  // A memory range this member refuses must not make it unusable: calls still work with
  // unregistered buffers.
  if (s.ok()) init_(**client).IgnoreError();
  absl::MutexLock lock(&mu_);
  if (!s.ok()) {
    ++connect_failures_;
    last_connect_error_ = s;
    return s;
  }
  client_ = *std::move(client);
  return client_.get();
}

absl::StatusOr<Client*> MemberConn::Begin(const Key128* ns, absl::Time deadline) {
  // Out of time is the cluster call's doing, not the member's: no breaker bookkeeping.
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat("cluster member ", member_.id, ": the cluster call ran out of time"));
  }
  if (!breaker_.Allow(absl::Now())) {
    return absl::UnavailableError(
        absl::StrCat("cluster member ", member_.id, ": circuit breaker open"));
  }
  absl::StatusOr<Client*> client = Connect(deadline);
  if (client.ok() && ns != nullptr) {
    bool registered;
    {
      absl::MutexLock lock(&mu_);
      registered = namespaces_.contains(*ns);
    }
    if (!registered) {
      absl::Status s = open_(**client, *ns);
      if (s.ok()) {
        absl::MutexLock lock(&mu_);
        namespaces_.insert(*ns);
      } else if (!absl::IsNotFound(s)) {  // NOT_FOUND: not opened here; the call decides
        client = s;
      }
    }
  }
  if (!client.ok()) Done(client.status());
  return client;
}

void MemberConn::Done(const absl::Status& s) {
  const bool failed = IsMemberFailure(s);
  breaker_.Record(!failed, absl::Now());
  absl::MutexLock lock(&mu_);
  ++calls_;
  if (failed) ++call_errors_;
  last_ok_ = !failed;
}

Client* MemberConn::connected() {
  absl::MutexLock lock(&mu_);
  return client_.get();
}

absl::Status MemberConn::WithConnected(const std::function<absl::Status(Client&)>& fn) {
  absl::MutexLock connect_lock(&connect_mu_);
  Client* client = connected();
  return client != nullptr ? fn(*client) : absl::OkStatus();
}

void MemberConn::ForgetNamespace(const Key128& ns) {
  absl::MutexLock lock(&mu_);
  namespaces_.erase(ns);
}

bool MemberConn::Skip() const {
  return breaker_.state(absl::Now()) == CircuitBreaker::State::kOpen;
}

bool MemberConn::BreakerOpen() const { return breaker_.IsOpen(absl::Now()); }

ClusterMemberStatus MemberConn::Status() const {
  ClusterMemberStatus out;
  out.id = member_.id;
  out.address = uri_.empty() ? "" : uri_.substr(uri_.find("://") + 3);
  out.zone = member_.zone;
  for (const cluster::TierCapacity& t : member_.tiers) {
    // A tier this client does not know is left out.
    if (ChunkTier tier = ChunkTierFromName(t.tier); tier != ChunkTier::kNone) {
      out.tiers.push_back({tier, t.capacity_bytes});
    }
  }
  out.breaker_open = BreakerOpen();
  absl::MutexLock lock(&mu_);
  out.connected = client_ != nullptr && last_ok_;
  out.calls = calls_;
  out.call_errors = call_errors_;
  return out;
}

}  // namespace kvstash::client_internal
