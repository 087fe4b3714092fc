#include "client/ucx_transport.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "client/uri.h"
#include "common/ucx_setup.h"

namespace kvstash::client_internal {
namespace {

using WireOp = wire::ucx::Op;

// The UCX op of each unary call (proto/calls.h).
WireOp OpOf(UnaryMethod method) {
  switch (method) {
#define KVSTASH_UCX_OP_OF(name, metric, ucx_op) \
  case UnaryMethod::k##name:                    \
    return WireOp::k##name;
    KVSTASH_CALLS(KVSTASH_UCX_OP_OF, KVSTASH_CALL_SKIP)
#undef KVSTASH_UCX_OP_OF
  }
  return WireOp::kHealth;
}

ParallelCopier::Options CopierOptions(const ClientOptions& options) {
  ParallelCopier::Options o;
  o.helpers = options.ucx_direct ? options.ucx_copy_threads : 0;
  return o;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UcxTransport>> UcxTransport::Create(const std::string& host,
                                                                   int port,
                                                                   const ClientOptions& options) {
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK)
    return absl::UnavailableError(absl::StrCat("ucp_config_read: ", ucs_status_string(s)));
  absl::StatusOr<uint64_t> segment =
      ucx_setup::ConfigureUcx(options.ucx_tls, options.ucx_tcp_segment_bytes, config);
  if (!segment.ok()) {
    ucp_config_release(config);
    return absl::InvalidArgumentError(segment.status().message());
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  // RMA: unpacking the remote key of the daemon's arena for direct access.
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | UCP_FEATURE_RMA;
  ucp_context_h context = nullptr;
  s = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (s != UCS_OK) return absl::UnavailableError(absl::StrCat("ucp_init: ", ucs_status_string(s)));
  const std::string address = absl::StrCat(host, ":", port);
  std::unique_ptr<UcxTransport> t(new UcxTransport(address, context, options, *segment));
  absl::StatusOr<SocketAddress> resolved = ResolveTcp(host, port);
  if (!resolved.ok()) return resolved.status();
  t->addr_ = resolved->addr;
  t->addr_len_ = resolved->len;
  if (t->idle_progress_ > absl::ZeroDuration()) {
    t->idle_thread_ = std::thread([p = t.get()] { p->IdleLoop(); });
  }
  return t;
}

UcxTransport::UcxTransport(const std::string& address, ucp_context_h context,
                           const ClientOptions& options, uint64_t tcp_segment_bytes)
    : address_(address),
      context_(context),
      direct_(options.ucx_direct),
      token_(options.EffectiveToken()),
      tcp_segment_bytes_(tcp_segment_bytes),
      idle_progress_(absl::Milliseconds(options.ucx_idle_progress_ms)),
      copier_(CopierOptions(options)),
      memh_lookup_([this](const void* data, size_t size) { return FindMemh(data, size); }) {}

UcxTransport::~UcxTransport() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (idle_thread_.joinable()) idle_thread_.join();
  {
    absl::MutexLock lock(&mu_);
    idle_.clear();
    for (auto& [start, region] : regions_) ucp_mem_unmap(context_, region.memh);
    regions_.clear();
  }
  ucp_cleanup(context_);
}

absl::StatusOr<std::unique_ptr<UcxChannel>> UcxTransport::Acquire(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<UcxChannel> ch = std::move(idle_.back());
      idle_.pop_back();
      return ch;
    }
  }
  absl::StatusOr<std::unique_ptr<UcxChannel>> ch =
      UcxChannel::Connect(context_, reinterpret_cast<const sockaddr*>(&addr_), addr_len_, direct_,
                          tcp_segment_bytes_, token_, &copier_, deadline);
  if (!ch.ok()) {
    return absl::Status(ch.status().code(),
                        absl::StrCat("kvstashd at ucx://", address_, ": ", ch.status().message()));
  }
  return ch;
}

void UcxTransport::Release(std::unique_ptr<UcxChannel> channel) {
  absl::MutexLock lock(&mu_);
  if (!channel->broken()) {
    idle_.push_back(std::move(channel));
    return;
  }
  // One broken connection usually means the daemon went away: the idle ones are stale
  // too, and a retry should connect afresh rather than find that out one by one.
  DropIdle(std::move(channel));
}

void UcxTransport::DropIdle(std::unique_ptr<UcxChannel> channel) {
  std::vector<std::unique_ptr<UcxChannel>> dropped;
  dropped.swap(idle_);
  mu_.Unlock();
  channel.reset();
  dropped.clear();
  mu_.Lock();
}

void UcxTransport::IdleLoop() {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), idle_progress_)) {
    // Channels in idle_ belong to no call, and every call takes its channel under mu_.
    bool broken = false;
    for (const std::unique_ptr<UcxChannel>& ch : idle_) {
      ch->ProgressIdle();
      broken = broken || ch->broken();
    }
    if (broken) DropIdle(nullptr);
  }
}

absl::Status UcxTransport::WaitConnected(absl::Time deadline) {
  CallContext ctx;
  ctx.deadline = deadline;
  return Health(ctx).status();
}

template <typename Result, typename Fn>
Result UcxTransport::WithChannel(absl::Time deadline, Fn fn) {
  absl::StatusOr<std::unique_ptr<UcxChannel>> ch = Acquire(deadline);
  if (!ch.ok()) return ch.status();
  Result out = fn(**ch);
  Release(std::move(*ch));
  return out;
}

absl::StatusOr<std::string> UcxTransport::CallUnary(const CallContext& ctx,
                                                    const UnaryRequest& req) {
  return WithChannel<absl::StatusOr<std::string>>(ctx.deadline, [&](UcxChannel& ch) {
    return ch.Unary(OpOf(req.method), req.ns, req.body, ctx.deadline);
  });
}

absl::Status UcxTransport::Put(const CallContext& ctx, const Key128& ns, absl::Span<PutItem> items,
                               absl::Span<const uint64_t> checksums) {
  return WithChannel<absl::Status>(ctx.deadline, [&](UcxChannel& ch) {
    return ch.Put(ns, items, checksums, memh_lookup_, ctx.deadline);
  });
}

absl::Status UcxTransport::Get(const CallContext& ctx, const Key128& ns, absl::Span<GetItem> items,
                               uint64_t lease_id) {
  return WithChannel<absl::Status>(ctx.deadline, [&](UcxChannel& ch) {
    return ch.Get(ns, items, lease_id, memh_lookup_, ctx.deadline);
  });
}

absl::Status UcxTransport::RegisterMemory(const void* data, size_t size) {
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = const_cast<void*>(data);
  params.length = size;
  ucp_mem_h memh = nullptr;
  if (ucs_status_t s = ucp_mem_map(context_, &params, &memh); s != UCS_OK) {
    return absl::InvalidArgumentError(absl::StrCat("ucp_mem_map: ", ucs_status_string(s)));
  }
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = regions_.emplace(reinterpret_cast<uintptr_t>(data), Region{size, memh});
  if (!inserted) {
    ucp_mem_unmap(context_, memh);
    return absl::AlreadyExistsError("memory at this address is already registered");
  }
  return absl::OkStatus();
}

absl::Status UcxTransport::UnregisterMemory(const void* data) {
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(reinterpret_cast<uintptr_t>(data));
  if (it == regions_.end()) return absl::NotFoundError("memory at this address is not registered");
  ucp_mem_unmap(context_, it->second.memh);
  regions_.erase(it);
  return absl::OkStatus();
}

ucp_mem_h UcxTransport::FindMemh(const void* data, size_t size) const {
  const uintptr_t p = reinterpret_cast<uintptr_t>(data);
  absl::MutexLock lock(&mu_);
  auto it = regions_.upper_bound(p);
  if (it == regions_.begin()) return nullptr;
  --it;
  if (p + size > it->first + it->second.size) return nullptr;
  return it->second.memh;
}

}  // namespace kvstash::client_internal
