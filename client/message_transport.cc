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
                                                      uint32_t lease_ms) {
  absl::StatusOr<std::string> body = CallUnary(ctx, LookupRequest(ns, keys, lease_ms));
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

}  // namespace kvstash::client_internal
