// The watch behind EtcdClient::WatchPrefix: one thread keeps one etcd watch stream open,
// moving to the next endpoint when the stream breaks and resuming from the revision after
// the last one it delivered.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cluster/etcd_internal.h"

namespace kvstash::cluster::etcd_internal {
namespace {

// Pause between attempts when an endpoint fails, so a dead cluster is not spun on.
constexpr absl::Duration kRetryPause = absl::Milliseconds(100);

// Thread-safety: the destructor may run on any thread except the watch's own (its
// callbacks); everything else runs on the watch's thread.
class WatchImpl final : public EtcdWatch {
 public:
  WatchImpl(std::shared_ptr<Endpoints> endpoints, std::string prefix, int64_t start_revision,
            OnEvents on_events, OnError on_error, int64_t give_up_ms)
      : endpoints_(std::move(endpoints)),
        prefix_(std::move(prefix)),
        next_revision_(start_revision),
        on_events_(std::move(on_events)),
        on_error_(std::move(on_error)),
        give_up_(absl::Milliseconds(give_up_ms)) {
    thread_ = std::thread([this] { Run(); });
  }

  ~WatchImpl() override {
    if (std::this_thread::get_id() == thread_.get_id()) {
      // Joining its own thread would throw from a destructor and terminate anyway; say why.
      std::fprintf(stderr,
                   "kvstash: an etcd watch of %s was destroyed from its own on_events or "
                   "on_error callback (see EtcdWatch in cluster/etcd_client.h)\n",
                   prefix_.c_str());
      std::abort();
    }
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      if (context_ != nullptr) context_->TryCancel();
      cv_.SignalAll();
    }
    thread_.join();
  }

 private:
  enum class Outcome { kStopped, kEndpointFailed, kFatal };

  void Run();
  // One stream on `ep` until it breaks; `*created` tells whether etcd accepted the watch.
  Outcome RunStream(const Endpoint& ep, bool* created, absl::Status* why);
  // Handles one response; kFatal (with `why`) when the watch cannot go on.
  bool HandleResponse(const etcdserverpb::WatchResponse& response, bool* created,
                      absl::Status* why);
  // Waits for `ep` to connect: false when it failed or stayed unconnected for the call
  // timeout (a black-holed address), or the watch is stopping.
  bool WaitConnected(const Endpoint& ep);
  bool Stopping() {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }
  // Sleeps up to `d`; false when the watch is stopping.
  bool Pause(absl::Duration d) {
    const absl::Time until = absl::Now() + d;
    absl::MutexLock lock(&mu_);
    while (!stopping_ && !cv_.WaitWithDeadline(&mu_, until)) {
    }
    return !stopping_;
  }

  const std::shared_ptr<Endpoints> endpoints_;
  const std::string prefix_;
  int64_t next_revision_;  // the first revision not yet delivered; 0: from now
  const OnEvents on_events_;
  const OnError on_error_;
  const absl::Duration give_up_;

  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

void WatchImpl::Run() {
  const size_t n = endpoints_->list.size();
  size_t i = endpoints_->preferred.load(std::memory_order_relaxed);
  absl::Time failing_since = absl::InfiniteFuture();
  std::string last_failure;
  while (true) {
    const Endpoint& ep = endpoints_->list[i % n];
    bool created = false;
    absl::Status why;
    Outcome outcome = RunStream(ep, &created, &why);
    if (outcome == Outcome::kStopped) return;
    if (outcome == Outcome::kFatal) {
      on_error_(why);
      return;
    }
    if (created) {
      endpoints_->preferred.store(i % n, std::memory_order_relaxed);
      failing_since = absl::Now();
    } else if (failing_since == absl::InfiniteFuture()) {
      failing_since = absl::Now();
    }
    last_failure = std::string(why.message());
    if (absl::Now() - failing_since >= give_up_) {
      on_error_(absl::UnavailableError(
          absl::StrCat("etcd watch of ", prefix_, ": no endpoint answered for ",
                       absl::FormatDuration(give_up_), " (last: ", last_failure, ")")));
      return;
    }
    ++i;
    if (!Pause(kRetryPause)) return;
  }
}

bool WatchImpl::WaitConnected(const Endpoint& ep) {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(endpoints_->options.call_timeout_ms);
  while (!Stopping()) {
    grpc_connectivity_state state = ep.channel->GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY) return true;
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) return false;
    const absl::Time now = absl::Now();
    if (now >= deadline) return false;
    ep.channel->WaitForStateChange(
        state, absl::ToChronoTime(std::min(deadline, now + absl::Milliseconds(200))));
  }
  return false;
}

WatchImpl::Outcome WatchImpl::RunStream(const Endpoint& ep, bool* created, absl::Status* why) {
  if (!WaitConnected(ep)) {
    if (Stopping()) return Outcome::kStopped;
    *why = absl::UnavailableError(absl::StrCat(ep.address, ": not connected"));
    return Outcome::kEndpointFailed;
  }
  auto context = std::make_shared<grpc::ClientContext>();
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return Outcome::kStopped;
    context_ = context;
  }
  // etcd's require-leader: a member cut off from its cluster ends the stream instead of
  // keeping it open and silent, so the watch moves to an endpoint that still has a leader.
  context->AddMetadata("hasleader", "true");
  auto stream = ep.watch->Watch(context.get());
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(prefix_);
  create->set_range_end(PrefixEnd(prefix_));
  create->set_start_revision(next_revision_);
  create->set_progress_notify(true);
  bool fatal = false;
  if (stream->Write(request)) {
    etcdserverpb::WatchResponse response;
    while (stream->Read(&response)) {
      if (!HandleResponse(response, created, why)) {
        fatal = true;
        context->TryCancel();
        break;
      }
    }
  }
  grpc::Status status = stream->Finish();
  {
    absl::MutexLock lock(&mu_);
    context_.reset();
    if (stopping_) return Outcome::kStopped;
  }
  if (fatal) return Outcome::kFatal;
  *why = FromGrpc(status, "Watch", ep.address);
  if (why->ok()) *why = absl::UnavailableError(absl::StrCat(ep.address, ": watch ended"));
  return Outcome::kEndpointFailed;
}

bool WatchImpl::HandleResponse(const etcdserverpb::WatchResponse& response, bool* created,
                               absl::Status* why) {
  if (response.compact_revision() != 0) {
    *why = absl::OutOfRangeError(
        absl::StrCat("etcd watch of ", prefix_, ": revision ", next_revision_,
                     " was compacted (oldest kept: ", response.compact_revision(), ")"));
    return false;
  }
  if (response.canceled()) {
    *why = absl::AbortedError(
        absl::StrCat("etcd cancelled the watch of ", prefix_, ": ", response.cancel_reason()));
    return false;
  }
  if (response.created()) {
    *created = true;
    if (next_revision_ <= 0) next_revision_ = response.header().revision() + 1;
    return true;
  }
  if (response.events_size() == 0) {
    // A progress notification: every change up to the header's revision was sent.
    next_revision_ = std::max(next_revision_, response.header().revision() + 1);
    return true;
  }
  std::vector<EtcdEvent> events;
  events.reserve(response.events_size());
  for (const etcdserverpb::Event& e : response.events()) {
    EtcdEvent event;
    event.type =
        e.type() == etcdserverpb::Event::DELETE ? EtcdEvent::Type::kDelete : EtcdEvent::Type::kPut;
    event.kv = FromProto(e.kv());
    if (event.type == EtcdEvent::Type::kDelete) event.kv.value.clear();
    events.push_back(std::move(event));
  }
  // The header's revision may run ahead of events still queued for this watcher, so
  // progress is counted from the events themselves.
  const int64_t revision = events.back().kv.mod_revision;
  next_revision_ = std::max(next_revision_, revision + 1);
  on_events_(events, revision);
  return true;
}

}  // namespace

std::unique_ptr<EtcdWatch> StartWatch(std::shared_ptr<Endpoints> endpoints, std::string prefix,
                                      int64_t start_revision, OnEvents on_events, OnError on_error,
                                      int64_t give_up_ms) {
  return std::make_unique<WatchImpl>(std::move(endpoints), std::move(prefix), start_revision,
                                     std::move(on_events), std::move(on_error), give_up_ms);
}

}  // namespace kvstash::cluster::etcd_internal
