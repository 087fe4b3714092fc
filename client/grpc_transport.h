// GrpcTransport: Transport over gRPC, through a generic stub: unary calls carry the
// serialized messages of messages.h, Put and Get stream zero-copy frames (grpc_streams.h).
// Calls are spread round robin over `ClientOptions::connections` channels, each its own TCP
// connection.
//
// Thread-safety: thread-safe.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/channel_arguments.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "client/grpc_tls.h"
#include "client/local_arena.h"
#include "client/message_transport.h"
#include "kvstash/client.h"

namespace kvstash::client_internal {

// gRPC headers and field tags of a frame stay well below this; it is added to the payload
// size when setting message limits.
inline constexpr int kFrameOverheadBytes = 64 << 10;
// The largest Get frame payload accepted from the daemon (its send_frame_bytes).
inline constexpr int kMaxReceiveFrameBytes = 4 << 20;

// Arguments of channel `index`: a private subchannel pool and an index argument so
// channels never share a connection; message limits from frame_bytes; gRPC's own retries
// off (ClientImpl retries) and reconnect backoff matched to ours; BDP probing off with a
// large fixed flow-control window, which moves MiB-sized frames faster.
grpc::ChannelArguments MakeChannelArguments(const ClientOptions& options, int index);

class GrpcTransport final : public MessageTransport {
 public:
  // target: "host:port"; security: plaintext or TLS (MakeChannelSecurity). REQUIRES:
  // options.Validate().ok(). Does not wait for the connections; see WaitConnected.
  // `arena_socket`: the daemon's local arena socket, where Gets read what they can
  // straight from its arena (LocalArena); "" for none.
  GrpcTransport(const std::string& target, const ClientOptions& options,
                const ChannelSecurity& security, const std::string& arena_socket = "");

  absl::Status WaitConnected(absl::Time deadline) override;
  absl::Status Put(const CallContext& ctx, const Key128& ns, absl::Span<PutItem> items,
                   absl::Span<const uint64_t> checksums) override;
  absl::Status Get(const CallContext& ctx, const Key128& ns, absl::Span<GetItem> items,
                   uint64_t lease_id) override;

 protected:
  absl::StatusOr<std::string> CallUnary(const CallContext& ctx, const UnaryRequest& req) override;

 private:
  struct Connection {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<grpc::GenericStub> stub;
  };
  Connection& Next();

  // `ctx` with the token as each call presents it on a plaintext channel: metadata (gRPC
  // drops call credentials there).
  CallContext WithAuthorization(const CallContext& ctx) const;

  const std::string target_;
  const uint32_t frame_bytes_;
  const std::string authorization_;      // "Bearer <token>"; "" without a token (or over TLS)
  std::vector<Connection> connections_;  // fixed after construction
  std::atomic<uint64_t> next_{0};
  std::unique_ptr<LocalArena> local_arena_;  // null: every Get goes through gRPC
};

}  // namespace kvstash::client_internal
