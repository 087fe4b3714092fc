#include "client/grpc_transport.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "client/grpc_streams.h"
#include "client/wire_convert.h"
#include "proto/namespace_spec.h"
#include "proto/status_map.h"

namespace kvstash::client_internal {
namespace {

// Per-stream receive window while BDP probing is off. Large enough that a few MiB-sized
// frames are in flight at once on loopback and datacenter links.
constexpr int kStreamWindowBytes = 16 << 20;

template <typename Req, typename Resp>
using StubMethod = grpc::Status (v1::KvStash::Stub::*)(grpc::ClientContext*, const Req&, Resp*);

template <typename Req, typename Resp>
absl::Status Unary(v1::KvStash::Stub* stub, StubMethod<Req, Resp> method, const CallContext& ctx,
                   const Req& req, Resp* resp) {
  grpc::ClientContext cc;
  ApplyDeadline(ctx, &cc);
  return wire::FromGrpcStatus((stub->*method)(&cc, req, resp));
}

v1::KeysRequest MakeKeysRequest(const Key128& ns, absl::Span<const Key128> keys) {
  v1::KeysRequest req;
  req.set_namespace_id(KeyToBytes(ns));
  req.set_keys(KeysToBytes(keys));
  return req;
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

GrpcTransport::GrpcTransport(const std::string& target, const ClientOptions& options)
    : target_(target), frame_bytes_(options.frame_bytes) {
  connections_.resize(options.connections);
  for (int i = 0; i < options.connections; ++i) {
    Connection& c = connections_[i];
    c.channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                          MakeChannelArguments(options, i));
    c.stub = v1::KvStash::NewStub(c.channel);
    c.generic = std::make_unique<grpc::GenericStub>(c.channel);
  }
}

GrpcTransport::Connection& GrpcTransport::Next() {
  return connections_[next_.fetch_add(1, std::memory_order_relaxed) % connections_.size()];
}

absl::Status GrpcTransport::WaitConnected(absl::Time deadline) {
  for (size_t i = 0; i < connections_.size(); ++i) {
    if (!connections_[i].channel->WaitForConnected(absl::ToChronoTime(deadline))) {
      return absl::UnavailableError(
          absl::StrCat("connection ", i, " to kvstashd at ", target_, " not established in time"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Key128> GrpcTransport::RegisterNamespace(const CallContext& ctx,
                                                        const Namespace& spec) {
  v1::RegisterNamespaceRequest req;
  *req.mutable_spec() = wire::NamespaceToProto(spec);
  v1::RegisterNamespaceResponse resp;
  absl::Status s = Unary(Next().stub.get(), &v1::KvStash::Stub::RegisterNamespace, ctx, req, &resp);
  if (!s.ok()) return s;
  return KeyFromBytes(resp.namespace_id(), "namespace id");
}

absl::StatusOr<LookupResult> GrpcTransport::Lookup(const CallContext& ctx, const Key128& ns,
                                                   absl::Span<const Key128> keys,
                                                   uint32_t lease_ms) {
  v1::LookupRequest req;
  req.set_namespace_id(KeyToBytes(ns));
  req.set_keys(KeysToBytes(keys));
  req.set_lease_ms(lease_ms);
  v1::LookupResponse resp;
  absl::Status s = Unary(Next().stub.get(), &v1::KvStash::Stub::Lookup, ctx, req, &resp);
  if (!s.ok()) return s;
  if (resp.hit_count() > keys.size() || resp.tiers().size() != resp.hit_count()) {
    return absl::InternalError(absl::StrCat("LookupResponse: ", resp.hit_count(), " hits, ",
                                            resp.tiers().size(), " tiers for ", keys.size(),
                                            " keys"));
  }
  LookupResult out;
  out.hit_count = resp.hit_count();
  out.tiers = TiersFromBytes(resp.tiers());
  out.lease_id = resp.lease_id();
  return out;
}

absl::Status GrpcTransport::Put(const CallContext& ctx, const Key128& ns, absl::Span<PutItem> items,
                                absl::Span<const uint64_t> checksums) {
  return RunPutStream(Next().generic.get(), ctx, ns, items, checksums, frame_bytes_);
}

absl::Status GrpcTransport::Get(const CallContext& ctx, const Key128& ns, absl::Span<GetItem> items,
                                uint64_t lease_id) {
  return RunGetStream(Next().generic.get(), ctx, ns, items, lease_id);
}

absl::StatusOr<std::vector<ChunkTier>> GrpcTransport::Exists(const CallContext& ctx,
                                                             const Key128& ns,
                                                             absl::Span<const Key128> keys) {
  v1::ExistsResponse resp;
  absl::Status s =
      Unary(Next().stub.get(), &v1::KvStash::Stub::Exists, ctx, MakeKeysRequest(ns, keys), &resp);
  if (!s.ok()) return s;
  if (resp.present().size() != keys.size()) {
    return absl::InternalError(absl::StrCat("ExistsResponse: ", resp.present().size(),
                                            " answers for ", keys.size(), " keys"));
  }
  return TiersFromBytes(resp.present());
}

absl::StatusOr<uint32_t> GrpcTransport::Delete(const CallContext& ctx, const Key128& ns,
                                               absl::Span<const Key128> keys) {
  v1::DeleteResponse resp;
  absl::Status s =
      Unary(Next().stub.get(), &v1::KvStash::Stub::Delete, ctx, MakeKeysRequest(ns, keys), &resp);
  if (!s.ok()) return s;
  return resp.deleted();
}

absl::StatusOr<ServerStats> GrpcTransport::Stats(const CallContext& ctx, const Key128* ns) {
  v1::StatsRequest req;
  if (ns != nullptr) req.set_namespace_id(KeyToBytes(*ns));
  v1::StatsResponse resp;
  absl::Status s = Unary(Next().stub.get(), &v1::KvStash::Stub::Stats, ctx, req, &resp);
  if (!s.ok()) return s;
  return StatsFromProto(resp, ns);
}

absl::StatusOr<HealthInfo> GrpcTransport::Health(const CallContext& ctx) {
  v1::HealthResponse resp;
  absl::Status s =
      Unary(Next().stub.get(), &v1::KvStash::Stub::Health, ctx, v1::HealthRequest(), &resp);
  if (!s.ok()) return s;
  return HealthFromProto(resp);
}

}  // namespace kvstash::client_internal
