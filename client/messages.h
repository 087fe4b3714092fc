// The wire API's messages as every client transport sends and checks them: each unary
// request is built here into its serialized kvstash.v1 message, each serialized reply is
// parsed and checked here against the request, and the per-chunk rules of Put and Get
// (what an unanswered item reads, what a chunk too large for its buffer reads) live here,
// so gRPC and UCX only move these bytes and cannot drift apart.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "proto/calls.h"

namespace kvstash::client_internal {

// The unary calls of the wire API (proto/calls.h); each transport maps them to its own
// method names.
enum class UnaryMethod { KVSTASH_CALLS(KVSTASH_CALL_ENUMERATOR, KVSTASH_CALL_SKIP) };

// A serialized unary request. `ns` (not owned; null for calls naming no namespace) is
// also carried outside the body by transports that route on it.
struct UnaryRequest {
  UnaryMethod method;
  const Key128* ns = nullptr;
  std::string body;
};

UnaryRequest RegisterNamespaceRequest(const Namespace& spec);
UnaryRequest LookupRequest(const Key128& ns, absl::Span<const Key128> keys, uint32_t lease_ms,
                           uint64_t session_id);
UnaryRequest ExistsRequest(const Key128& ns, absl::Span<const Key128> keys);
UnaryRequest DeleteRequest(const Key128& ns, absl::Span<const Key128> keys);
// ns == nullptr: totals only.
UnaryRequest StatsRequest(const Key128* ns);
UnaryRequest HealthRequest();
UnaryRequest ListNamespacesRequest();
UnaryRequest ClearNamespaceRequest(const Key128& ns);
UnaryRequest PinRequest(const Key128& ns, absl::Span<const Key128> keys, bool pin);
UnaryRequest EndSessionRequest(const Key128& ns, uint64_t session_id);

// Reply parsers: INTERNAL when `body` is not the expected message or contradicts the
// request (the daemon broke the protocol).
absl::StatusOr<Key128> ParseRegisterNamespaceReply(absl::string_view body);
// key_count: keys in the request; hit_count may not exceed it, and tiers has one byte per hit.
absl::StatusOr<LookupResult> ParseLookupReply(absl::string_view body, size_t key_count);
// One tier per requested key.
absl::StatusOr<std::vector<ChunkTier>> ParseExistsReply(absl::string_view body, size_t key_count);
absl::StatusOr<uint32_t> ParseDeleteReply(absl::string_view body);
absl::StatusOr<ServerStats> ParseStatsReply(absl::string_view body, const Key128* ns);
absl::StatusOr<HealthInfo> ParseHealthReply(absl::string_view body);
// Every namespace id must be 16 bytes.
absl::StatusOr<std::vector<NamespaceUsage>> ParseListNamespacesReply(absl::string_view body);
absl::StatusOr<uint64_t> ParseClearNamespaceReply(absl::string_view body);
// key_count: keys in the request; more changed than asked about is a broken reply.
absl::StatusOr<uint32_t> ParsePinReply(absl::string_view body, size_t key_count);
absl::Status ParseEndSessionReply(absl::string_view body);

// Put: every item starts unanswered (UNAVAILABLE, not already present); the daemon's
// answer for a chunk replaces that.
void ResetPutResults(absl::Span<PutItem> items);
// Get: every item starts unanswered (UNAVAILABLE, no size, tokens, format or checksum).
void ResetGetResults(absl::Span<GetItem> items);

// A Get answer's description of a chunk.
struct ChunkMeta {
  uint64_t size_bytes = 0;
  uint32_t tokens = 0;
  uint32_t format = 0;
  uint64_t checksum = 0;
};
// Records `meta` in `item`. A chunk larger than item.capacity sets RESOURCE_EXHAUSTED (size
// tells the caller what to allocate) and returns false: its bytes are not to be written.
bool AcceptGetChunk(const ChunkMeta& meta, GetItem* item);
// The status of a Get item the daemon answered with `code` (not 0), naming the chunk:
// "chunk <hex>: <detail>" with the daemon's own message where the wire carries one, else
// "chunk <hex> not found" or "... could not be read".
absl::Status GetChunkError(const Key128& key, int code, absl::string_view detail);
// A Get item for which the daemon reported a chunk of `size_bytes`, beyond its capacity.
absl::Status TooLargeError(const GetItem& item, uint64_t size_bytes);

}  // namespace kvstash::client_internal
