// Tables, target checks and JSON lines of the NVMe suite (nvme_suite.h).
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/nvme_suite.h"
#include "bench/report.h"

namespace kvstash::bench {
namespace {

// The targets.
constexpr double kNvmeGetVsFioReadMin = 0.6;
constexpr double kPutVsFioWriteMin = 0.5;
constexpr double kDramGetDropMax = 0.10;
constexpr double kRebuildChunksPerSecMin = 100000;
constexpr double kDiskOverBudgetMax = 1.25;

// The error-free row of `system` (fio rows: transport "disk"; kvstash: "grpc" unless given).
const NvmeRow* Find(const std::vector<NvmeRow>& rows, const std::string& system,
                    const std::string& op, const std::string& variant, int clients,
                    const std::string& transport = "grpc") {
  const std::string via = system == "fio" ? "disk" : transport;
  for (const NvmeRow& r : rows) {
    if (r.system == system && r.transport == via && r.op == op && r.variant == variant &&
        (clients == 0 || r.clients == clients) && r.errors == 0) {
      return &r;
    }
  }
  return nullptr;
}

void PrintRatio(std::ostream& out, const char* what, const NvmeRow* a, const NvmeRow* b,
                double min) {
  out << absl::StrFormat("  %-52s ", what);
  if (a == nullptr || b == nullptr || b->gbps <= 0) {
    out << "NOT MEASURED\n";
    return;
  }
  const double ratio = a->gbps / b->gbps;
  out << absl::StrFormat("%s  %.3f / %.3f GB/s = %.2fx (target >= %.2fx)\n",
                         ratio >= min ? "MET    " : "NOT MET", a->gbps, b->gbps, ratio, min);
}

// What the transport allows without the disk, measured in the same run.
void PrintCeiling(std::ostream& out, const char* what, const NvmeRow* measured,
                  const NvmeRow* ceiling) {
  if (measured == nullptr || ceiling == nullptr || ceiling->gbps <= 0) return;
  out << absl::StrFormat("    (%s, 4 clients, same transport: %.3f GB/s; %.2fx of it)\n", what,
                         ceiling->gbps, measured->gbps / ceiling->gbps);
}

// Judged on the median of the rounds' ratios: the two cells of a round run back to back
// (their order alternating), so the host's drift between rounds, often larger than the
// effect, cancels out; the ratio of the cells' medians follows for reference.
void PrintDramGetTarget(std::ostream& out, const NvmeSuiteOutput& suite) {
  const NvmeRow* with = Find(suite.rows, "kvstash", "get", "with_demotion", 1);
  const NvmeRow* without = Find(suite.rows, "kvstash", "get", "no_demotion", 1);
  out << absl::StrFormat("  %-52s ", "DRAM-hit get with/without demotion >= 0.9x");
  if (suite.dram_get_round_ratios.empty() || with == nullptr || without == nullptr ||
      without->gbps <= 0) {
    out << "NOT MEASURED\n";
    return;
  }
  const double median = Median(suite.dram_get_round_ratios);
  out << (median >= 1 - kDramGetDropMax ? "MET    " : "NOT MET") << "  rounds";
  for (double r : suite.dram_get_round_ratios) out << absl::StrFormat(" %.2f", r);
  out << absl::StrFormat(", median %.2fx (target >= %.2fx)\n", median, 1 - kDramGetDropMax);
  out << absl::StrFormat("    (medians of the cells: %.3f / %.3f GB/s = %.2fx)\n", with->gbps,
                         without->gbps, with->gbps / without->gbps);
}

}  // namespace

void PrintNvmeRows(std::ostream& out, const std::vector<NvmeRow>& rows) {
  out << absl::StrFormat("%-8s %-8s %-5s %-8s %-14s %7s %4s %9s %10s %9s %9s %8s %6s %6s\n",
                         "system", "via", "tier", "op", "variant", "size", "cli", "GB/s", "ops/s",
                         "p50 us", "p99 us", "chunks", "drops", "errors");
  for (const NvmeRow& r : rows) {
    out << absl::StrFormat(
        "%-8s %-8s %-5s %-8s %-14s %7s %4d %9.3f %10.0f %9.0f %9.0f %8d %6d %6d\n", r.system,
        r.transport, r.tier, r.op, r.variant, FormatBytes(r.chunk_bytes), r.clients, r.gbps,
        r.ops_per_s, r.p50_us, r.p99_us, r.chunks, r.drops, r.errors);
    if (r.op == "rebuild") {
      out << absl::StrFormat("    rebuild %.0f ms (daemon log), ready after %.0f ms\n",
                             r.rebuild_ms, r.ready_ms);
    }
    if (r.op == "churn") {
      out << absl::StrFormat("    disk/budget during churn p50 %.2f max %.2f, 5 s after %.2f\n",
                             r.disk_ratio_p50, r.disk_ratio_max, r.disk_ratio_after);
    }
    if (r.errors > 0) out << "    first error: " << r.first_error << "\n";
  }
}

void PrintNvmeTargets(std::ostream& out, const NvmeSuiteOutput& suite) {
  const std::vector<NvmeRow>& rows = suite.rows;
  const NvmeRow* fio_read = Find(rows, "fio", "read", "", 0);
  const NvmeRow* fio_write = Find(rows, "fio", "write", "", 0);
  for (const char* via : {"grpc", "ucx-shm"}) {
    const NvmeRow* get = Find(rows, "kvstash", "get", "", 4, via);
    PrintRatio(out, absl::StrCat("NVMe-hit get 4MiB x4 over ", via, " >= 0.6x fio read").c_str(),
               get, fio_read, kNvmeGetVsFioReadMin);
    PrintCeiling(out, "DRAM hits", get, Find(rows, "kvstash", "get", "hot", 4, via));
    PrintRatio(out, "  same, 8 chunks per request >= 0.6x fio read",
               Find(rows, "kvstash", "get", "batch", 4, via), fio_read, kNvmeGetVsFioReadMin);
  }
  PrintRatio(out, "put 4MiB x4 with demotion >= 0.5x fio write",
             Find(rows, "kvstash", "put", "with_demotion", 4), fio_write, kPutVsFioWriteMin);
  if (const NvmeRow* put = Find(rows, "kvstash", "put", "with_demotion", 4)) {
    out << "    (default settings: " << put->drops
        << " evictions dropped, not written to NVMe, over the rounds)\n";
  }
  for (const char* via : {"grpc", "ucx-shm"}) {
    const NvmeRow* put = Find(rows, "kvstash", "put", "backpressure", 4, via);
    PrintRatio(out, absl::StrCat("  back-pressure over ", via, " >= 0.5x fio write").c_str(), put,
               fio_write, kPutVsFioWriteMin);
    PrintCeiling(out, "the same puts on a DRAM-only daemon", put,
                 Find(rows, "kvstash", "put", "no_demotion", 4, via));
  }
  PrintDramGetTarget(out, suite);
  const NvmeRow* churn = Find(rows, "kvstash", "churn", "disk_usage", 0);
  out << absl::StrFormat("  %-52s ", "disk usage under churn <= 1.25x budget (p50, max)");
  if (churn == nullptr) {
    out << "NOT MEASURED\n";
  } else {
    out << absl::StrFormat("%s  p50 %.2fx, max %.2fx, 5 s after %.2fx\n",
                           churn->disk_ratio_max <= kDiskOverBudgetMax   ? "MET    "
                           : churn->disk_ratio_p50 <= kDiskOverBudgetMax ? "MET p50"
                                                                         : "NOT MET",
                           churn->disk_ratio_p50, churn->disk_ratio_max, churn->disk_ratio_after);
  }
  const NvmeRow* rebuild = Find(rows, "kvstash", "rebuild", "100k", 0);
  out << absl::StrFormat("  %-52s ", "index rebuild of 100k chunks >= 100k chunks/s");
  if (rebuild == nullptr) {
    out << "NOT MEASURED\n";
  } else {
    out << absl::StrFormat("%s  %d chunks in %.0f ms = %.0f chunks/s\n",
                           rebuild->ops_per_s >= kRebuildChunksPerSecMin ? "MET    " : "NOT MET",
                           rebuild->chunks, rebuild->rebuild_ms, rebuild->ops_per_s);
  }
}

absl::Status WriteNvmeJsonLines(const std::string& path, const std::vector<NvmeRow>& rows) {
  std::ofstream out(path, std::ios::app);
  if (!out) return absl::UnavailableError("cannot write " + path);
  for (const NvmeRow& r : rows) {
    out << absl::StrFormat(
        "{\"system\":\"%s\",\"transport\":\"%s\",\"tier\":\"%s\",\"op\":\"%s\","
        "\"variant\":\"%s\",\"chunk_bytes\":%d,\"clients\":%d,\"gbps\":%.4f,"
        "\"ops_per_s\":%.2f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"rounds\":%d,\"errors\":%d",
        r.system, r.transport, r.tier, r.op, r.variant, r.chunk_bytes, r.clients, r.gbps,
        r.ops_per_s, r.p50_us, r.p99_us, r.rounds, r.errors);
    if (r.op == "rebuild") {
      out << absl::StrFormat(",\"chunks\":%d,\"rebuild_ms\":%.1f,\"ready_ms\":%.1f", r.chunks,
                             r.rebuild_ms, r.ready_ms);
    }
    if (r.op == "put") out << ",\"demotion_drops\":" << r.drops;
    if (r.op == "churn") {
      out << absl::StrFormat(
          ",\"disk_ratio_p50\":%.3f,\"disk_ratio_max\":%.3f,\"disk_ratio_after\":%.3f",
          r.disk_ratio_p50, r.disk_ratio_max, r.disk_ratio_after);
    }
    out << "}\n";
  }
  out.flush();
  return out ? absl::OkStatus() : absl::DataLossError("write failed: " + path);
}

}  // namespace kvstash::bench
