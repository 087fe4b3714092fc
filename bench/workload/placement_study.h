// The placement study: which unit a cluster client should place by rendezvous hashing
// (cluster/placement.h), measured on the workload traces without any daemon. A trace is
// replayed through KeyChain in arrival order against an unbounded store; every chunk is
// placed on one of N members by its own key (unit "chunk"), by its chain's first key (unit
// "chain": a prefix chain on one member), or by the first key of its group of
// `segment_chunks` chunks (unit "segmentS", in between). Per request: a lookup of the
// prompt's full chunks (the leading ones already stored are hits), a get of each hit, a
// put of each missing prompt chunk and of the output's new full chunks.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/workload/trace.h"
#include "kvstash/keys.h"

namespace kvstash::bench::workload {

// A placement unit: 1 chunk (per-chunk spreading), a group of chunks, or the whole chain.
struct PlacementUnit {
  // Chunks placed together, by the key of the group's first chunk; 0: the whole chain.
  uint32_t group_chunks = 1;
  // Copies of each of the hottest 1% of chunks (by the trace's chunk requests), on the
  // first owners of its rendezvous order: gets alternate between them, puts go to all.
  uint32_t hot_replicas = 1;
  // "chunk", "chain" or "segment<N>", with "+hot<R>" when hot chunks are replicated.
  std::string Name() const;
};

struct PlacementStudyOptions {
  // Seconds of trace time per window of the busiest-window imbalance.
  double window_s = 10;
  // Decode rate that spaces a session's turns (the workload model's default), tokens/s.
  double decode_tokens_per_s = 50;
  // Stored bytes of one chunk (bytes per token x chunk tokens).
  uint64_t chunk_bytes = 32ull << 20;
};

// What one (trace, member count, unit) replay measured.
struct PlacementResult {
  std::string unit;
  int members = 0;
  uint64_t requests = 0;        // turns replayed
  uint64_t lookups = 0;         // turns with at least one full chunk
  uint64_t chunk_requests = 0;  // gets of hits + puts of missing chunks, over all members
  uint64_t chunks_stored = 0;
  // max / mean over members of chunk requests and of bytes stored; the hottest member's
  // share of all chunk requests; max / mean of chunk requests in the busiest window.
  double requests_max_over_mean = 0;
  double bytes_max_over_mean = 0;
  double hottest_share = 0;
  double busiest_window_max_over_mean = 0;
  // Members one lookup asks (one round trip each, in parallel): mean and p99.
  double lookup_members_mean = 0;
  double lookup_members_p99 = 0;
  // Mean over lookups of the largest share of its keys one member checks: a parallel
  // lookup's critical path relative to one member checking them all (1.0 for chains).
  double lookup_max_share_mean = 0;
  // Members the hits of one request are fetched from (requests with hits): mean.
  double fetch_members_mean = 0;
  // Hit chunks still usable when one member is lost (its chunks become misses and a
  // lookup stops at the first one), averaged over which member is lost, / all hit chunks.
  double hits_kept_after_loss = 0;
  uint64_t hit_chunks = 0;
  uint64_t prompt_chunks = 0;
  // Share of all chunk requests that ask for the hottest 1% of chunks (shared system
  // prompts): what no placement of single copies can spread.
  double top_percent_share = 0;
};

// Replays `trace` for each member count and unit. REQUIRES: members > 0.
std::vector<PlacementResult> RunPlacementStudy(const Trace& trace, const KeyChain& chain,
                                               const std::vector<int>& member_counts,
                                               const std::vector<PlacementUnit>& units,
                                               const PlacementStudyOptions& options);

// The member ids of an N-member study cluster: "kvstash-0" ... "kvstash-<N-1>".
std::vector<std::string> StudyMemberIds(int members);

}  // namespace kvstash::bench::workload
