// Command-line flags of kvstash_workload (bench/README.md, "Workloads", lists them).
//
// Thread-safety: ParseWorkloadOptions uses process-wide flags; call it from main only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/workload/model.h"
#include "bench/workload/simulator.h"
#include "bench/workload/trace.h"

namespace kvstash::bench::workload {

// One store of --store.
struct StoreSpec {
  enum class Kind { kNone, kKvstash, kRedis, kMemcached };
  std::string name;  // as given: none, kvstash, kvstash-nvme, kvstash-ucx, kvstash-nvme-ucx, ...
  Kind kind = Kind::kNone;
  bool nvme = false;  // kvstash: DRAM + NVMe tiers
  bool ucx = false;   // kvstash: clients over UCX
};

struct WorkloadOptions {
  std::vector<WorkloadKind> workloads;
  std::vector<StoreSpec> stores;
  ModelShape model;
  GpuSpec gpu;
  CostModel cost;  // DefaultCost(model, gpu), then flags, then --calibration
  uint32_t chunk_tokens = 256;
  // Fraction of the model's bytes sent over the wire; 0: the largest power of two <= 1
  // that keeps a workload's working set on the wire within max_wire_working_set_bytes.
  double byte_scale = 0;
  uint64_t max_wire_working_set_bytes = 2ull << 30;
  double engine_cache_fraction = 0.1;
  std::vector<double> capacity_fractions = {0.25};
  double nvme_fraction = 1.0;
  std::vector<std::string> policies = {""};  // storage.dram.eviction; "": the daemon's default
  std::vector<HintOptions> hint_sets = {HintOptions{}};
  // kvstash stores: with (true) or without kvstash::FetchAdvisor deciding what to fetch.
  std::vector<bool> advisor = {true};
  std::vector<std::string> kvstash_sets;
  TraceOptions trace;
  double speedup = 10;
  std::string json_path, csv_path, plots_dir;
  std::string kvstashd_path, redis_path, memcached_path;
  std::string ucx_tls = "sm,self";
  bool keep_scratch = false;
  bool short_form = false;
  bool help = false;
};

// INVALID_ARGUMENT with a one-line reason for a bad flag or value.
absl::StatusOr<WorkloadOptions> ParseWorkloadOptions(int argc, char** argv,
                                                     const std::string& default_kvstashd);

std::string WorkloadUsage();

}  // namespace kvstash::bench::workload
