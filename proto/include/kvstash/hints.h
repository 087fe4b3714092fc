// Application hints: what a writer knows about a chunk's future that the cache cannot
// guess. Carried by puts (and a lookup's session id) from the client through the wire to
// the chunk store; docs/protocol.md ("Hints") gives their wire form and meaning.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>

#include "kvstash/keys.h"

namespace kvstash {

// Eviction class of a chunk: kLow goes before kNormal, kNormal before kHigh. Values match
// kvstash.v1.Priority on the wire.
enum class Priority : uint8_t { kNormal = 0, kLow = 1, kHigh = 2 };

struct PutHints {
  // The chunk before this one in its prompt's key chain (same namespace); has_parent false
  // for a prompt's first chunk or a writer that does not say. Chain-aware eviction keeps a
  // chain's head while any of its tail is cached.
  bool has_parent = false;
  Key128 parent{};
  // Session the chunk belongs to (0: none). A session's chunks are demoted, not dropped,
  // until the session ends (EndSession) or idles past the daemon's session timeout.
  uint64_t session_id = 0;
  // Keep the chunk at least this long after the put (0: no TTL); afterwards it is an
  // ordinary chunk of its priority.
  uint32_t ttl_ms = 0;
  Priority priority = Priority::kNormal;
  // Keep the chunk until unpinned, within the tenant's pin quota (a put past the quota is
  // stored unpinned and counted).
  bool pin = false;
};

}  // namespace kvstash
