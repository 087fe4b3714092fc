// Where a chunk lies in the shared DRAM arena, as the transports that let same-host
// clients copy it themselves tell them (UCX direct access, the local arena socket), and
// how much of the arena one connection may hold that way.
//
// Thread-safety: functions of their arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "proto/ucx_wire.h"

namespace kvstash::server {

// Most bytes one connection may have reserved or held in an arena of `arena_bytes` at
// once; beyond it, chunks move another way (UCX: copied by the daemon; the local arena:
// left for a later request or gRPC), so one connection cannot pin the tier (the local
// arena also caps all its connections together).
inline uint64_t DirectBudget(uint64_t arena_bytes) { return arena_bytes / 8; }

// The ArenaRun records of a chunk's segments (adjacent ones merged) in the arena of
// `arena_bytes` at `arena`, or "" when one lies outside it.
template <typename Segment>
std::string ArenaRuns(const uint8_t* arena, uint64_t arena_bytes, absl::Span<const Segment> segs) {
  std::vector<wire::ucx::ArenaRun> runs;
  for (const Segment& seg : segs) {
    const uint8_t* p = seg.data;
    if (p < arena || seg.size > arena_bytes ||
        static_cast<uint64_t>(p - arena) > arena_bytes - seg.size) {
      return {};
    }
    const uint64_t offset = static_cast<uint64_t>(p - arena);
    if (!runs.empty() && runs.back().offset + runs.back().length == offset) {
      runs.back().length += seg.size;
    } else {
      runs.push_back({offset, seg.size});
    }
  }
  return std::string(reinterpret_cast<const char*>(runs.data()),
                     runs.size() * sizeof(wire::ucx::ArenaRun));
}

}  // namespace kvstash::server
