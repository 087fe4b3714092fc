// How the same-host transports (UCX, the local arena socket), which describe a Put's chunk
// with wire::ucx records, turn it into the transport-neutral PutChunkHeader.
//
// Thread-safety: functions of their arguments.
#pragma once

#include "absl/strings/string_view.h"
#include "proto/ucx_wire.h"
#include "server/request_rules.h"

namespace kvstash::server {

// The hints `f` carries (all zero: none). `parent_key` points into `f`.
inline PutChunkHints HintsFromWire(const wire::ucx::PutHintsFields& f) {
  PutChunkHints out;
  if ((f.hint_flags & wire::ucx::kHintHasParent) != 0) {
    out.parent_key =
        absl::string_view(reinterpret_cast<const char*>(f.parent_key), sizeof(f.parent_key));
  }
  out.session_id = f.session_id;
  out.ttl_ms = f.ttl_ms;
  out.priority = f.priority;
  out.pin = (f.hint_flags & wire::ucx::kHintPin) != 0;
  return out;
}

// The header of chunk `f` with `hints`; its views point into both.
inline PutChunkHeader PutHeaderFromWire(const wire::ucx::PutFields& f,
                                        const wire::ucx::PutHintsFields& hints) {
  PutChunkHeader h;
  h.index = f.index;
  h.count = f.count;
  h.key = absl::string_view(reinterpret_cast<const char*>(f.key), sizeof(f.key));
  h.meta = storage::ChunkMeta{f.size_bytes, f.tokens, f.format, f.checksum};
  h.hints = HintsFromWire(hints);
  return h;
}

}  // namespace kvstash::server
