#include "bench/nvme_rows.h"

#include <stdio.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "bench/report.h"

namespace kvstash::bench {

void NvmeRowCollector::Add(const NvmeRow& r) {
  samples_[{r.system, r.transport, r.tier, r.op, r.variant, r.chunk_bytes, r.clients}].push_back(r);
}

std::vector<NvmeRow> NvmeRowCollector::Rows() const {
  std::vector<NvmeRow> rows;
  for (const auto& [key, rounds] : samples_) {
    NvmeRow r = rounds.front();
    auto median = [&](double NvmeRow::*field) {
      std::vector<double> v;
      for (const NvmeRow& s : rounds) v.push_back(s.*field);
      return Median(v);
    };
    r.gbps = median(&NvmeRow::gbps);
    r.ops_per_s = median(&NvmeRow::ops_per_s);
    r.p50_us = median(&NvmeRow::p50_us);
    r.p99_us = median(&NvmeRow::p99_us);
    r.rebuild_ms = median(&NvmeRow::rebuild_ms);
    r.ready_ms = median(&NvmeRow::ready_ms);
    r.disk_ratio_p50 = median(&NvmeRow::disk_ratio_p50);
    r.disk_ratio_max = median(&NvmeRow::disk_ratio_max);
    r.disk_ratio_after = median(&NvmeRow::disk_ratio_after);
    r.rounds = static_cast<int>(rounds.size());
    r.errors = r.drops = 0;
    for (const NvmeRow& s : rounds) {
      r.errors += s.errors;
      r.drops += s.drops;
      if (r.first_error.empty()) r.first_error = s.first_error;
    }
    rows.push_back(r);
  }
  return rows;
}

NvmeRow FromCell(const char* tier, const char* op, const char* variant, size_t size, int clients,
                 const CellResult& c) {
  NvmeRow r;
  r.tier = tier;
  r.op = op;
  r.variant = variant;
  r.chunk_bytes = size;
  r.clients = clients;
  r.gbps = c.gbps;
  r.ops_per_s = c.ops_per_s;
  r.p50_us = c.p50_us;
  r.p99_us = c.p99_us;
  r.errors = c.errors;
  r.first_error = c.first_error;
  return r;
}

uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    const uintmax_t size = it->file_size(size_ec);
    if (!size_ec && it->is_regular_file(size_ec)) total += size;
  }
  return total;
}

double LoggedRebuildMs(const std::string& log) {
  const size_t at = log.rfind("rebuild_ms=");
  if (at == std::string::npos) return -1;
  double ms = -1;
  const size_t end = log.find_first_of(" \n", at);
  if (!absl::SimpleAtod(log.substr(at + 11, end - at - 11), &ms)) return -1;
  return ms;
}

double FioBandwidth(const std::string& json, const std::string& section) {
  const size_t at = json.find("\"" + section + "\" : {");
  if (at == std::string::npos) return -1;
  const size_t bw = json.find("\"bw_bytes\" : ", at);
  if (bw == std::string::npos) return -1;
  double v = -1;
  const size_t begin = bw + 13;
  const size_t end = json.find_first_of(",\n", begin);
  return absl::SimpleAtod(json.substr(begin, end - begin), &v) ? v : -1;
}

absl::StatusOr<std::string> RunCommand(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return absl::UnavailableError("popen failed: " + command);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  if (pclose(p) != 0) return absl::UnavailableError("failed: " + command);
  return out;
}

}  // namespace kvstash::bench
