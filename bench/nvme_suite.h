// The NVMe benchmark (`kvstash_bench --nvme`): kvstashd with its RocksDB tier next to the
// raw disk (fio) on the same filesystem, in one run:
//   - get of 4 MiB chunks that hit NVMe (a small DRAM tier, promote_on_hit off), over gRPC
//     and over UCX shared memory (the transport of an engine on the same host);
//   - put of 4 MiB chunks into a full DRAM tier, every put demoting a chunk to NVMe (with
//     back-pressure also over UCX shared memory), and the same puts into a DRAM-only daemon
//     (what the transport and DRAM tier allow when nothing is written to disk);
//   - DRAM-hit get while a background writer keeps demotion busy, against the same load on
//     a DRAM-only daemon (the cost of demotion to DRAM hits);
//   - disk usage under churn: 4x the NVMe budget put through a daemon with a 1 GiB NVMe
//     budget, the database directory sampled meanwhile and after the puts stop;
//   - index rebuild at start-up with 10k and 100k chunks on NVMe;
//   - fio sequential 1 MiB direct write and read (rows with system = fio).
// Each metric is the median over rounds; targets print as ratios to the fio rows.
//
// Thread-safety: RunNvmeSuite is called once, from the main thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/runner.h"

namespace kvstash::bench {

// One measurement, the median over rounds of each metric.
struct NvmeRow {
  std::string system = "kvstash";  // kvstash | fio
  std::string transport = "grpc";  // grpc | ucx-shm (NVMe-hit gets, puts) | disk (fio)
  std::string tier;                // dram | nvme (the tier the measured ops hit or fill)
  std::string op;                  // get | put | churn | rebuild | read | write
  std::string variant;             // e.g. with_demotion, no_demotion; "" when one kind
  size_t chunk_bytes = 0;
  int clients = 0;
  int rounds = 0;
  double gbps = 0, ops_per_s = 0, p50_us = 0, p99_us = 0;
  uint64_t chunks = 0;    // rebuild: chunks recovered
  double rebuild_ms = 0;  // rebuild: as the daemon logged it (index rebuild only)
  double ready_ms = 0;    // rebuild: spawn until ready (process start included)
  uint64_t errors = 0;    // failed operations, summed over rounds
  uint64_t drops = 0;     // put: demotions dropped (queue full), summed over rounds
  // churn: database directory bytes / NVMe budget, median and max of the samples taken in
  // the second half of the churn, and 5 s after the puts stopped.
  double disk_ratio_p50 = 0, disk_ratio_max = 0, disk_ratio_after = 0;
  std::string first_error;
};

struct NvmeSuiteOutput {
  std::vector<NvmeRow> rows;
  // DRAM-hit get with / without demotion, one ratio per round: the two cells of a round
  // run back to back, so the host's drift between rounds cancels out.
  std::vector<double> dram_get_round_ratios;
  std::vector<std::string> notes;  // skipped parts and caveats, with reasons
};

// Uses config.kvstashd_path, rounds, limits, kvstash_sets (applied to every daemon) and
// keep_scratch. Errors: the scratch directory or a daemon could not be set up.
absl::StatusOr<NvmeSuiteOutput> RunNvmeSuite(const RunConfig& config, std::ostream& progress);

void PrintNvmeRows(std::ostream& out, const std::vector<NvmeRow>& rows);
void PrintNvmeTargets(std::ostream& out, const NvmeSuiteOutput& suite);
absl::Status WriteNvmeJsonLines(const std::string& path, const std::vector<NvmeRow>& rows);

}  // namespace kvstash::bench
