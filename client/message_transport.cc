#include "client/message_transport.h"

namespace kvstash::client_internal {

absl::StatusOr<Key128> MessageTransport::RegisterNamespace(const CallContext& ctx,
                                                           const Namespace& spec) {
  absl::StatusOr<std::string> body = CallUnary(ctx, RegisterNamespaceRequest(spec));
  if (!body.ok()) return body.status();
  return ParseRegisterNamespaceReply(*body);
}

absl::StatusOr<LookupResult> MessageTransport::Lookup(const CallContext& ctx, const Key128& ns,
                                                      absl::Span<const Key128> keys,
                                                      uint32_t lease_ms, uint64_t session_id) {
  absl::StatusOr<std::string> body = CallUnary(ctx, LookupRequest(ns, keys, lease_ms, session_id));
  if (!body.ok()) return body.status();
  return ParseLookupReply(*body, keys.size());
}

absl::StatusOr<std::vector<ChunkTier>> MessageTransport::Exists(const CallContext& ctx,
                                                                const Key128& ns,
                                                                absl::Span<const Key128> keys) {
  absl::StatusOr<std::string> body = CallUnary(ctx, ExistsRequest(ns, keys));
  if (!body.ok()) return body.status();
  return ParseExistsReply(*body, keys.size());
}

absl::StatusOr<uint32_t> MessageTransport::Delete(const CallContext& ctx, const Key128& ns,
                                                  absl::Span<const Key128> keys) {
  absl::StatusOr<std::string> body = CallUnary(ctx, DeleteRequest(ns, keys));
  if (!body.ok()) return body.status();
  return ParseDeleteReply(*body);
}

absl::StatusOr<ServerStats> MessageTransport::Stats(const CallContext& ctx, const Key128* ns) {
  absl::StatusOr<std::string> body = CallUnary(ctx, StatsRequest(ns));
  if (!body.ok()) return body.status();
  return ParseStatsReply(*body, ns);
}

absl::StatusOr<HealthInfo> MessageTransport::Health(const CallContext& ctx) {
  absl::StatusOr<std::string> body = CallUnary(ctx, HealthRequest());
  if (!body.ok()) return body.status();
  return ParseHealthReply(*body);
}

absl::StatusOr<std::vector<NamespaceUsage>> MessageTransport::ListNamespaces(
    const CallContext& ctx) {
  absl::StatusOr<std::string> body = CallUnary(ctx, ListNamespacesRequest());
  if (!body.ok()) return body.status();
  return ParseListNamespacesReply(*body);
}

absl::StatusOr<uint64_t> MessageTransport::ClearNamespace(const CallContext& ctx,
                                                          const Key128& ns) {
  absl::StatusOr<std::string> body = CallUnary(ctx, ClearNamespaceRequest(ns));
  if (!body.ok()) return body.status();
  return ParseClearNamespaceReply(*body);
}

absl::StatusOr<uint32_t> MessageTransport::Pin(const CallContext& ctx, const Key128& ns,
                                               absl::Span<const Key128> keys, bool pin) {
  absl::StatusOr<std::string> body = CallUnary(ctx, PinRequest(ns, keys, pin));
  if (!body.ok()) return body.status();
  return ParsePinReply(*body, keys.size());
}

absl::Status MessageTransport::EndSession(const CallContext& ctx, const Key128& ns,
                                          uint64_t session_id) {
  absl::StatusOr<std::string> body = CallUnary(ctx, EndSessionRequest(ns, session_id));
  if (!body.ok()) return body.status();
  return ParseEndSessionReply(*body);
}

}  // namespace kvstash::client_internal
