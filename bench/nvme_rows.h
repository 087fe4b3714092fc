// Helpers of the NVMe benchmark (nvme_suite.cc): per-round rows and their medians, and
// readings of the disk, the daemon's log and fio's output.
//
// Thread-safety: NvmeRowCollector is used from one thread; the functions are stateless.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/nvme_suite.h"
#include "bench/runner.h"

namespace kvstash::bench {

// Collects one NvmeRow per round for each measurement; Rows() takes the medians.
class NvmeRowCollector {
 public:
  void Add(const NvmeRow& r);
  std::vector<NvmeRow> Rows() const;

 private:
  using RowKey =
      std::tuple<std::string, std::string, std::string, std::string, std::string, size_t, int>;
  std::map<RowKey, std::vector<NvmeRow>> samples_;
};

// A row of the kvstash system from one measured cell.
NvmeRow FromCell(const char* tier, const char* op, const char* variant, size_t size, int clients,
                 const CellResult& c);

// Apparent bytes of every file under `dir` (files deleted while we walk are skipped).
uint64_t DirectoryBytes(const std::string& dir);

// The daemon's own rebuild_ms from its start-up line, or -1.
double LoggedRebuildMs(const std::string& log);

// bw_bytes of the `section` ("read" or "write") in fio's JSON output, or -1.
double FioBandwidth(const std::string& json, const std::string& section);

// The standard output of a shell command; UNAVAILABLE when it cannot run or exits non-zero.
absl::StatusOr<std::string> RunCommand(const std::string& command);

}  // namespace kvstash::bench
