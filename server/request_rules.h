// The request rules that need no store: limits, key lists, Put chunk headers and the Get
// request's decoding. The request layer (requests.h) and the Put stream parser
// (grpc/put_stream.h) apply them; they are free functions so that the decoders of untrusted
// input can be exercised without a daemon (tests/fuzz/).
//
// Thread-safety: plain values and stateless functions; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kvstash/keys.h"
#include "server/namespace_registry.h"
#include "storage/chunk.h"

namespace kvstash::v1 {
class GetRequest;
}  // namespace kvstash::v1

namespace kvstash::server {

struct ServiceLimits {
  uint64_t max_frame_bytes = 4ull << 20;   // largest Put frame payload accepted
  uint64_t send_frame_bytes = 1ull << 20;  // payload per Get frame
  uint32_t max_keys_per_request = 65536;   // keys per request, chunks per Put call
  uint32_t max_ttl_ms = 86400000;          // longest Put TTL hint accepted
};

// A Put chunk's hints as the wire carried them (docs/protocol.md, "Hints"), before
// CheckPutChunk validated them.
struct PutChunkHints {
  absl::string_view parent_key;  // empty: none; else must be 16 bytes
  uint64_t session_id = 0;
  uint32_t ttl_ms = 0;   // at most server.max_ttl_ms
  int64_t priority = 0;  // a kvstash::Priority value
  bool pin = false;
};

// What a Put names about one chunk before its bytes.
struct PutChunkHeader {
  uint32_t index = 0;     // position of the chunk in the Put call
  uint32_t count = 0;     // chunks in the call when the transport says up front; else 0
  absl::string_view key;  // must be 16 bytes
  storage::ChunkMeta meta;
  PutChunkHints hints;
};

// INVALID_ARGUMENT when `n` keys exceed server.max_keys_per_request.
absl::Status CheckKeyCount(size_t n, const ServiceLimits& limits);
// Splits concatenated 16-byte keys; INVALID_ARGUMENT for a ragged length or too many.
absl::StatusOr<std::vector<Key128>> ParseKeys(absl::string_view bytes, const ServiceLimits& limits);
// INVALID_ARGUMENT when a chunk header breaks a rule (key size, size_bytes 0, more chunks
// than server.max_keys_per_request, a parent key not of 16 bytes, an unknown priority, a
// TTL above server.max_ttl_ms): the whole call fails.
absl::Status CheckPutChunk(const PutChunkHeader& header, const ServiceLimits& limits);

}  // namespace kvstash::server
