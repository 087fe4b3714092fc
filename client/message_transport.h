// MessageTransport: the part of a Transport that is the same on every wire. Its unary calls
// build their requests and check their replies with messages.h; a subclass only moves the
// serialized bytes (CallUnary) and streams the chunks of Put and Get.
//
// Thread-safety: thread-safe where the subclass's CallUnary is.
#pragma once

#include <string>

#include "client/messages.h"
#include "client/transport.h"

namespace kvstash::client_internal {

class MessageTransport : public Transport {
 public:
  absl::StatusOr<Key128> RegisterNamespace(const CallContext& ctx, const Namespace& spec) final;
  absl::StatusOr<LookupResult> Lookup(const CallContext& ctx, const Key128& ns,
                                      absl::Span<const Key128> keys, uint32_t lease_ms,
                                      uint64_t session_id) final;
  absl::StatusOr<std::vector<ChunkTier>> Exists(const CallContext& ctx, const Key128& ns,
                                                absl::Span<const Key128> keys) final;
  absl::StatusOr<uint32_t> Delete(const CallContext& ctx, const Key128& ns,
                                  absl::Span<const Key128> keys) final;
  absl::StatusOr<ServerStats> Stats(const CallContext& ctx, const Key128* ns) final;
  absl::StatusOr<HealthInfo> Health(const CallContext& ctx) final;
  absl::StatusOr<std::vector<NamespaceUsage>> ListNamespaces(const CallContext& ctx) final;
  absl::StatusOr<uint64_t> ClearNamespace(const CallContext& ctx, const Key128& ns) final;
  absl::StatusOr<uint32_t> Pin(const CallContext& ctx, const Key128& ns,
                               absl::Span<const Key128> keys, bool pin) final;
  absl::Status EndSession(const CallContext& ctx, const Key128& ns, uint64_t session_id) final;

 protected:
  // One attempt of `req`: returns the serialized reply, or the daemon's or the wire's error.
  virtual absl::StatusOr<std::string> CallUnary(const CallContext& ctx,
                                                const UnaryRequest& req) = 0;
};

}  // namespace kvstash::client_internal
