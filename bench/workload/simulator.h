// The engine model run over one trace against one store: an event-driven simulation on a
// virtual clock in which compute is modelled and transfers are real.
//
// Per request: keys of the prompt's full chunks from the real KeyChain; the leading hits
// in the engine's own cache (EngineCache); when some full chunks remain, a real Lookup and
// a real fetch of the chunks the store has beyond the engine's hits (of those the
// FetchAdvisor, when given, says beat recomputing); then the prefill of the
// rest on the GPU; the first token ends the prefill (TTFT); the prompt's new chunks are put
// (real, asynchronous to the request); after the modelled decode, the output's full chunks
// are put too and the session's next turn is scheduled after its delay.
//
// Clock: one GPU is one FIFO queue of prefills (CostModel); decode is batched with other
// work and does not occupy the queue. Fetches and puts each use one link, full duplex: a
// transfer starts when the previous one on its link ended, and lasts its measured wall time
// divided by byte_scale (only byte_scale of the model's bytes cross the wire). Lookups add
// their measured time. So transfers overlap other requests' compute but not each other.
// Real calls run in virtual-time order, when the virtual clock reaches their start.
//
// Thread-safety: Simulate runs on the calling thread and owns everything it creates.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/workload/model.h"
#include "bench/workload/remote_store.h"
#include "bench/workload/trace.h"
#include "kvstash/fetch_advisor.h"
#include "kvstash/keys.h"

namespace kvstash::bench::workload {

// Which application hints puts and lookups carry (kvstash/hints.h).
struct HintOptions {
  bool session = false;      // session id per multi-turn session, on puts and lookups
  bool parent = false;       // PutHints::parent = the previous chunk's key
  bool ttl = false;          // TTL covering a known pause (agents' tool calls), 1.5x + 1 s
  std::string Name() const;  // "none", "session+parent", ...
};

struct SimOptions {
  CostModel cost;
  uint32_t chunk_tokens = 256;
  uint64_t chunk_model_bytes = 0;  // KV bytes of one chunk of the model
  // Fraction of the model's bytes that cross the wire (0 < byte_scale <= 1); measured
  // transfer times are divided by it.
  double byte_scale = 1;
  uint64_t engine_capacity_chunks = 0;
  // Capacity of the position-independent key analysis (RAG): an LRU of chunk contents.
  uint64_t pi_capacity_chunks = 0;
  HintOptions hints;
  // Fetch or recompute (not owned; null: every store hit after the engine's is fetched).
  // Asked per request how many of the store's hits to fetch given their tiers, and told of
  // every fetch (model bytes, virtual seconds), so it follows each tier's real speed.
  FetchAdvisor* advisor = nullptr;
  // Virtual seconds per wall second: real calls wait until their virtual time comes, so
  // the daemon's clocks (TTL, session idle timeout) see the trace's pauses scaled by
  // 1/speedup; TTL hints are divided by it too. 0: as fast as possible, TTLs unscaled.
  double speedup = 0;
  // The run stops after this many failed store calls (a dead server).
  int max_errors = 10;
};

struct SimResult {
  uint64_t requests = 0;
  uint64_t prompt_tokens = 0;
  uint64_t engine_hit_tokens = 0;
  uint64_t dram_hit_tokens = 0;  // fetched from the store's DRAM (all of a peer's hits)
  uint64_t nvme_hit_tokens = 0;
  // Chunks the store held after the engine's hits that the advisor chose to recompute.
  uint64_t declined_chunks = 0;
  // Tokens recomputed although their chunk's content was cached at another position: what
  // position-independent reuse could add (the engine would then have to re-rotate and
  // partly recompute attention across chunks).
  uint64_t pi_extra_tokens = 0;
  uint64_t fetched_model_bytes = 0;
  uint64_t put_model_bytes = 0;
  uint64_t wire_bytes = 0;  // fetched + put bytes that crossed the wire
  uint64_t lookups = 0;
  uint64_t put_refused_chunks = 0;
  double gpu_prefill_s = 0;
  double makespan_s = 0;  // virtual: first arrival to last event
  double transfer_s = 0;  // virtual seconds of fetch and put links busy
  double wall_s = 0;
  double max_lag_s = 0;  // with speedup: how far the real calls fell behind the clock
  std::vector<double> ttft_s;
  uint64_t errors = 0;
  std::string first_error;
};

// store == nullptr: the engine's cache only. REQUIRES: chain's chunk size is chunk_tokens.
SimResult Simulate(const Trace& trace, const KeyChain& chain, const SimOptions& options,
                   RemoteStore* store);

// Unique full-chunk keys of every prompt and output of the trace: its working set.
uint64_t WorkingSetChunks(const Trace& trace, const KeyChain& chain);
// The most full chunks of one request's prompt and output.
uint64_t LargestRequestChunks(const Trace& trace, uint32_t chunk_tokens);

}  // namespace kvstash::bench::workload
