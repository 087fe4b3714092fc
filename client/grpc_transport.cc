#include "client/grpc_transport.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/grpc_auth.h"
#include "client/grpc_call.h"
#include "client/grpc_streams.h"

namespace kvstash::client_internal {
namespace {

// Per-stream receive window while BDP probing is off. Large enough that a few MiB-sized
// frames are in flight at once on loopback and datacenter links.
constexpr int kStreamWindowBytes = 16 << 20;

// The gRPC method of each unary call (proto/calls.h): the service's method of its name.
const char* MethodName(UnaryMethod method) {
  switch (method) {
#define KVSTASH_GRPC_METHOD(name, metric, ucx_op) \
  case UnaryMethod::k##name:                      \
    return "/kvstash.v1.KvStash/" #name;
    KVSTASH_CALLS(KVSTASH_GRPC_METHOD, KVSTASH_CALL_SKIP)
#undef KVSTASH_GRPC_METHOD
  }
  return "";
}

// Runs `call` on items[rest] (`rest` ascending): on `items` itself when that is all of them,
// else on copies moved back after it.
template <typename Item, typename Call>
absl::Status OnSubset(absl::Span<Item> items, const std::vector<size_t>& rest, const Call& call) {
  if (rest.empty()) return absl::OkStatus();
  if (rest.size() == items.size()) return call(items);
  std::vector<Item> others;
  others.reserve(rest.size());
  for (size_t i : rest) others.push_back(items[i]);
  absl::Status s = call(absl::MakeSpan(others));
  for (size_t k = 0; k < rest.size(); ++k) items[rest[k]] = std::move(others[k]);
  return s;
}

}  // namespace

grpc::ChannelArguments MakeChannelArguments(const ClientOptions& options, int index) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("kvstash.connection_index", index);
  args.SetMaxSendMessageSize(static_cast<int>(options.frame_bytes) + kFrameOverheadBytes);
  args.SetMaxReceiveMessageSize(
      std::max<int>(kMaxReceiveFrameBytes, static_cast<int>(options.frame_bytes)) +
      kFrameOverheadBytes);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, static_cast<int>(options.initial_backoff_ms));
  // gRPC takes this as the least time a connection attempt gets (MIN_CONNECT_TIMEOUT), not
  // as a backoff. At initial_backoff_ms (20 ms) a handshake slower than that on a loaded
  // host is cut off ("tcp handshaker shutdown", seen once in CI when a call after a daemon
  // restart ran out of retries). A refused connection still fails at once and backs off.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(std::min<int64_t>(options.connect_timeout_ms, INT32_MAX)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options.max_backoff_ms));
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kStreamWindowBytes);
  return args;
}

GrpcTransport::GrpcTransport(const std::string& target, const ClientOptions& options,
                             const ChannelSecurity& security, const std::string& arena_socket)
    : target_(target),
      frame_bytes_(options.frame_bytes),
      authorization_(security.tls ? "" : BearerMetadata(options.EffectiveToken())) {
  // Over TLS the token rides as call credentials; plaintext calls carry authorization_.
  const std::shared_ptr<grpc::ChannelCredentials> credentials =
      security.tls ? WithBearerToken(security.credentials, options.EffectiveToken())
                   : security.credentials;
  connections_.resize(options.connections);
  for (int i = 0; i < options.connections; ++i) {
    Connection& c = connections_[i];
    grpc::ChannelArguments args = MakeChannelArguments(options, i);
    if (!security.server_name.empty()) args.SetSslTargetNameOverride(security.server_name);
    c.channel = grpc::CreateCustomChannel(target, credentials, args);
    c.stub = std::make_unique<grpc::GenericStub>(c.channel);
  }
  if (!arena_socket.empty()) {
    local_arena_ = std::make_unique<LocalArena>(arena_socket, options.EffectiveToken(),
                                                options.ucx_copy_threads);
  }
}

GrpcTransport::Connection& GrpcTransport::Next() {
  return connections_[next_.fetch_add(1, std::memory_order_relaxed) % connections_.size()];
}

absl::Status GrpcTransport::WaitConnected(absl::Time deadline) {
  // The last part of the time is kept for a fail-fast call that reports why the last
  // attempt failed (refused, TLS handshake), so that the whole stays within `deadline`.
  const absl::Duration reserve =
      std::min(absl::Milliseconds(200), std::max(absl::ZeroDuration(), deadline - absl::Now()) / 4);
  for (size_t i = 0; i < connections_.size(); ++i) {
    if (!connections_[i].channel->WaitForConnected(absl::ToChronoTime(deadline - reserve))) {
      CallContext probe;
      probe.deadline = deadline;
      absl::StatusOr<std::string> why =
          RunUnaryCall(connections_[i].stub.get(), probe, MethodName(UnaryMethod::kHealth), "");
      if (why.ok()) continue;  // connected within the reserve after all
      return absl::UnavailableError(
          absl::StrCat("connection ", i, " to kvstashd at ", target_,
                       " not established in time: ", why.status().message()));
    }
  }
  return absl::OkStatus();
}

CallContext GrpcTransport::WithAuthorization(const CallContext& ctx) const {
  CallContext out = ctx;
  out.authorization = authorization_;
  return out;
}

absl::StatusOr<std::string> GrpcTransport::CallUnary(const CallContext& ctx,
                                                     const UnaryRequest& req) {
  return RunUnaryCall(Next().stub.get(), WithAuthorization(ctx), MethodName(req.method), req.body);
}

absl::Status GrpcTransport::Put(const CallContext& ctx, const Key128& ns, absl::Span<PutItem> items,
                                absl::Span<const uint64_t> checksums) {
  const auto stream = [&](absl::Span<PutItem> some, absl::Span<const uint64_t> sums) {
    return RunPutStream(Next().stub.get(), WithAuthorization(ctx), ns, some, sums, frame_bytes_);
  };
  if (local_arena_ == nullptr) return stream(items, checksums);
  std::vector<size_t> rest;
  local_arena_->Put(ctx.deadline, ns, items, checksums, &rest);
  std::sort(rest.begin(), rest.end());
  return OnSubset(items, rest, [&](absl::Span<PutItem> others) {
    if (others.data() == items.data()) return stream(items, checksums);
    std::vector<uint64_t> sums(rest.size());
    for (size_t k = 0; k < rest.size(); ++k) sums[k] = checksums[rest[k]];
    return stream(others, sums);
  });
}

absl::Status GrpcTransport::Get(const CallContext& ctx, const Key128& ns, absl::Span<GetItem> items,
                                uint64_t lease_id) {
  const auto stream = [&](absl::Span<GetItem> some) {
    return RunGetStream(Next().stub.get(), WithAuthorization(ctx), ns, some, lease_id);
  };
  if (local_arena_ == nullptr) return stream(items);
  std::vector<size_t> rest;
  local_arena_->Get(ctx.deadline, ns, items, lease_id, &rest);
  std::sort(rest.begin(), rest.end());
  return OnSubset(items, rest, stream);
}

}  // namespace kvstash::client_internal
