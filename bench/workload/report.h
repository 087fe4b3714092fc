// Results of kvstash_workload: one row per (workload, store, capacity, policy, hints,
// advisor), with
// hit ratios per tier, TTFT statistics, throughput, bytes moved and the modelled GPU time
// saved against the engine-cache-only run of the same trace; printed as a table, written
// as JSON lines and CSV.
//
// Thread-safety: plain functions over values; call from one thread.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/kvstash_system.h"
#include "bench/workload/simulator.h"

namespace kvstash::bench::workload {

struct ResultRow {
  std::string workload;
  std::string store;             // none, kvstash, kvstash-nvme, redis, ...
  std::string transport;         // "-" (none), grpc, ucx, tcp
  double capacity_fraction = 0;  // store capacity / working set; 0 for none
  std::string policy;            // storage.dram.eviction ("default" when not set)
  std::string hints;             // HintOptions::Name()
  std::string advisor = "-";     // kvstash: "on" (FetchAdvisor decides) or "off"
  std::string model;
  double byte_scale = 1;
  uint64_t working_set_bytes = 0;  // model bytes of the trace's unique chunks
  uint64_t engine_capacity_chunks = 0;
  uint64_t store_capacity_bytes = 0;  // wire bytes given to the store's DRAM
  SimResult sim;
  // Advisor on: its bandwidth estimates at the end of the run, model bytes per second.
  double advisor_dram_bytes_per_s = 0;
  double advisor_nvme_bytes_per_s = 0;
  // The daemon's counters at the end of a kvstash run (evictions, demotions, drops).
  KvstashTierStats kvstash;
  std::string error;  // the run did not happen (e.g. the server did not start)

  double EngineHitRatio() const;
  double DramHitRatio() const;
  double NvmeHitRatio() const;
  double PiExtraRatio() const;
  double TtftMean() const;
  double TtftQuantile(double q) const;
  double RequestsPerSecond() const;
};

// Prefill GPU-seconds `row` saved against the none row of its workload (nullptr: 0; the
// outputs then leave the value out).
double GpuSecondsSaved(const ResultRow& row, const ResultRow* none);

class Reporter {
 public:
  // Opens the outputs that are set ("" skips one); INVALID_ARGUMENT when one cannot be written.
  absl::Status Open(const std::string& json_path, const std::string& csv_path);
  // Prints the row (the table's header before the first) and appends it to the files.
  void Add(std::ostream& out, ResultRow row);
  const std::vector<ResultRow>& rows() const { return rows_; }

 private:
  const ResultRow* NoneRow(const std::string& workload) const;
  // `none`: the workload's none row, or nullptr when it was not run.
  std::string JsonLine(const ResultRow& r, const ResultRow* none) const;
  std::string CsvLine(const ResultRow& r, const ResultRow* none) const;

  std::vector<ResultRow> rows_;
  std::string json_path_, csv_path_;
};

}  // namespace kvstash::bench::workload
