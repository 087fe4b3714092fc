// The benchmark sweep: starts the systems and fills kvstashd's DRAM tier; then for each
// round and chunk size stores a working set, runs the get cells and the put cells (systems
// interleaved within each cell, their order rotated per round), then the 1,000-key lookup
// cells; finally reads kvstashd's peak RSS.
//
// Thread-safety: RunBenchmark is called once, from the main thread (children are forked
// from it; see process.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/report.h"
#include "bench/workload.h"

namespace kvstash::bench {

struct RunConfig {
  std::vector<size_t> sizes;  // chunk sizes, bytes
  std::vector<int> clients;   // concurrent client threads per cell
  int rounds = 3;             // each cell runs once per round; the report takes medians
  CellLimits limits;          // per cell
  std::vector<std::string> systems = {"kvstash", "redis", "memcached"};

  // kvstashd
  std::string kvstashd_path;
  uint64_t budget_bytes = 4ull << 30;     // storage.dram.capacity_bytes
  std::vector<std::string> kvstash_sets;  // extra --set overrides
  uint32_t kvstash_frame_bytes = 0;       // 0: client default
  // Peers; empty: found in PATH.
  std::string redis_path;
  std::string memcached_path;

  // Bytes each system holds for the get cells of one size (keys cycled within it). Capped
  // at budget_bytes / 4 so the kvstash working set never competes with eviction.
  uint64_t working_set_bytes = 512ull << 20;

  int lookup_keys = 1000;                 // chunks per lookup prompt
  size_t lookup_chunk_bytes = 16u << 10;  // stored size of each prompt chunk

  // Before the rounds, kvstash's tier is filled with fill_factor x budget of fresh
  // chunks (steady state: full and evicting); its peak RSS is read at the end.
  bool fill_tier = true;
  size_t fill_chunk_bytes = 4u << 20;
  int fill_clients = 4;
  double fill_factor = 1.25;

  bool keep_scratch = false;  // keep logs and data after the run
};

struct RunOutput {
  std::vector<Sample> samples;
  RssResult rss;
  std::vector<std::string> notes;  // skipped systems and similar, for the report
};

// Runs the whole sweep; progress lines go to `progress`. Errors: no system could start,
// or the scratch directory could not be created.
absl::StatusOr<RunOutput> RunBenchmark(const RunConfig& config, std::ostream& progress);

}  // namespace kvstash::bench
