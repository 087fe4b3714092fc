// The wire behind Client: one implementation per URI scheme (grpc://, ucx://). A transport
// makes exactly one attempt per call; deadlines across retries, backoff, and namespace
// re-registration live above it, in ClientImpl, so every transport gets them. The messages
// are built and checked once, in messages.h, through MessageTransport.
//
// Thread-safety: implementations must be thread-safe; ClientImpl calls them concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"

namespace kvstash::client_internal {

// Per-attempt settings.
struct CallContext {
  // The attempt fails with DEADLINE_EXCEEDED once this passes.
  absl::Time deadline = absl::InfiniteFuture();
  // gRPC on a plaintext channel: the `authorization` metadata of the call ("Bearer
  // <token>"), set by GrpcTransport; empty: none. (TLS channels carry the token as call
  // credentials instead.) Points into the transport, which outlives its calls.
  absl::string_view authorization;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Blocks until every connection is established or `deadline` passes (UNAVAILABLE).
  virtual absl::Status WaitConnected(absl::Time deadline) = 0;

  // Returns the namespace id the daemon derived for `spec`.
  virtual absl::StatusOr<Key128> RegisterNamespace(const CallContext& ctx,
                                                   const Namespace& spec) = 0;
  virtual absl::StatusOr<LookupResult> Lookup(const CallContext& ctx, const Key128& ns,
                                              absl::Span<const Key128> keys, uint32_t lease_ms,
                                              uint64_t session_id) = 0;
  // Streams items[i] with checksums[i] (XXH3-64 of its payload, which the daemon verifies,
  // or 0: the daemon computes it); fills each item's status and already_present.
  // REQUIRES: checksums.size() == items.size().
  virtual absl::Status Put(const CallContext& ctx, const Key128& ns, absl::Span<PutItem> items,
                           absl::Span<const uint64_t> checksums) = 0;
  // Fills each item's buffer and out fields. Items the stream never answered keep an
  // error status.
  virtual absl::Status Get(const CallContext& ctx, const Key128& ns, absl::Span<GetItem> items,
                           uint64_t lease_id) = 0;
  virtual absl::StatusOr<std::vector<ChunkTier>> Exists(const CallContext& ctx, const Key128& ns,
                                                        absl::Span<const Key128> keys) = 0;
  virtual absl::StatusOr<uint32_t> Delete(const CallContext& ctx, const Key128& ns,
                                          absl::Span<const Key128> keys) = 0;
  // ns == nullptr: totals only.
  virtual absl::StatusOr<ServerStats> Stats(const CallContext& ctx, const Key128* ns) = 0;
  virtual absl::StatusOr<HealthInfo> Health(const CallContext& ctx) = 0;
  // The admin calls of Client.
  virtual absl::StatusOr<std::vector<NamespaceUsage>> ListNamespaces(const CallContext& ctx) = 0;
  virtual absl::StatusOr<uint64_t> ClearNamespace(const CallContext& ctx, const Key128& ns) = 0;
  virtual absl::StatusOr<uint32_t> Pin(const CallContext& ctx, const Key128& ns,
                                       absl::Span<const Key128> keys, bool pin) = 0;
  virtual absl::Status EndSession(const CallContext& ctx, const Key128& ns,
                                  uint64_t session_id) = 0;

  // See Client::RegisterMemory; transports without registration accept and ignore it.
  virtual absl::Status RegisterMemory(const void* data, size_t size) { return absl::OkStatus(); }
  virtual absl::Status UnregisterMemory(const void* data) { return absl::OkStatus(); }
};

using TransportPtr = std::unique_ptr<Transport>;

}  // namespace kvstash::client_internal
