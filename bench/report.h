// Results of a benchmark run: per-round samples reduced to medians, printed as a table,
// a kvstash/peer ratio table and the target checks, and written as JSON lines.
//
// Thread-safety: plain functions over values; call from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/workload.h"

namespace kvstash::bench {

// One cell (system, op, size, clients) of one round.
struct Sample {
  std::string system;
  std::string transport;
  Op op = Op::kGet;
  size_t chunk_bytes = 0;
  int clients = 0;
  int keys_per_op = 0;  // lookup only
  CellResult result;
};

// The median over rounds of one cell; each metric's median is taken on its own.
struct Row {
  std::string system;
  std::string transport;
  Op op = Op::kGet;
  size_t chunk_bytes = 0;
  int clients = 0;
  int keys_per_op = 0;
  int rounds = 0;
  double gbps = 0, ops_per_s = 0, p50_us = 0, p99_us = 0;
  uint64_t errors = 0;  // summed over rounds
  std::string first_error;
  std::string json_extra;  // `,"key":value` pairs appended to the row's JSON object
};

// kvstashd's memory after the DRAM tier was filled.
struct RssResult {
  bool measured = false;
  std::string skipped_reason;
  uint64_t peak_rss_bytes = 0;   // VmHWM
  uint64_t rss_bytes = 0;        // VmRSS at the end
  uint64_t budget_bytes = 0;     // storage.dram.capacity_bytes
  uint64_t dram_used_bytes = 0;  // as the daemon reports it
  uint64_t fill_bytes = 0;       // bytes put to fill the tier
  size_t fill_chunk_bytes = 0;
  int fill_clients = 0;
  double fill_gbps = 0;
  uint64_t errors = 0;
  std::string note;  // e.g. why the values are older than the end of the run
};

// The median of `v`; 0 when empty.
double Median(std::vector<double> v);

std::vector<Row> MedianRows(const std::vector<Sample>& samples);

void PrintResultTable(std::ostream& out, const std::vector<Row>& rows);
void PrintRatioTable(std::ostream& out, const std::vector<Row>& rows);
void PrintRss(std::ostream& out, const RssResult& rss);
void PrintTargets(std::ostream& out, const std::vector<Row>& rows, const RssResult& rss);

// One JSON object per line per Row, then one "rss" line when measured.
absl::Status WriteJsonLines(const std::string& path, const std::vector<Row>& rows,
                            const RssResult& rss);

// "256KiB", "4MiB", "1.5GiB".
std::string FormatBytes(uint64_t bytes);
// `s` with quotes, backslashes and control characters escaped for a JSON string.
std::string JsonEscape(const std::string& s);

}  // namespace kvstash::bench
