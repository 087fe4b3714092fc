#include "bench/workload/report.h"

#include <algorithm>
#include <fstream>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/report.h"
#include "bench/workload.h"

namespace kvstash::bench::workload {
namespace {

double Ratio(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : static_cast<double>(part) / static_cast<double>(whole);
}

constexpr const char* kCsvHeader =
    "workload,store,transport,capacity_fraction,policy,hints,advisor,model,byte_scale,"
    "working_set_bytes,engine_capacity_chunks,store_capacity_bytes,requests,prompt_tokens,"
    "engine_hit_ratio,dram_hit_ratio,nvme_hit_ratio,declined_chunks,pi_extra_ratio,ttft_mean_ms,"
    "ttft_p50_ms,ttft_p99_ms,requests_per_s,fetched_bytes,put_bytes,wire_bytes,lookups,"
    "put_refused_chunks,gpu_prefill_s,gpu_s_saved,transfer_s,makespan_s,wall_s,max_lag_s,"
    "errors,kvstash_evictions,kvstash_demotions,kvstash_demotion_drops,kvstash_nvme_hits,"
    "advisor_dram_bytes_per_s,advisor_nvme_bytes_per_s,error";

void PrintHeader(std::ostream& out) {
  out << absl::StrFormat(
      "%-9s %-16s %-5s %5s %-8s %-18s %-3s %5s %6s %6s %6s %6s %5s %8s %8s %8s %7s %9s %8s %8s "
      "%4s\n",
      "workload", "store", "xport", "cap", "policy", "hints", "adv", "reqs", "eng%", "dram%",
      "nvme%", "decl", "pi%", "ttft_ms", "p50_ms", "p99_ms", "req/s", "moved", "gpu_s", "saved_s",
      "err");
}

}  // namespace

double ResultRow::EngineHitRatio() const { return Ratio(sim.engine_hit_tokens, sim.prompt_tokens); }
double ResultRow::DramHitRatio() const { return Ratio(sim.dram_hit_tokens, sim.prompt_tokens); }
double ResultRow::NvmeHitRatio() const { return Ratio(sim.nvme_hit_tokens, sim.prompt_tokens); }
double ResultRow::PiExtraRatio() const { return Ratio(sim.pi_extra_tokens, sim.prompt_tokens); }

double ResultRow::TtftMean() const {
  if (sim.ttft_s.empty()) return 0;
  return std::accumulate(sim.ttft_s.begin(), sim.ttft_s.end(), 0.0) / sim.ttft_s.size();
}

double ResultRow::TtftQuantile(double q) const {
  std::vector<double> v = sim.ttft_s;
  return Quantile(v, q);
}

double ResultRow::RequestsPerSecond() const {
  return sim.makespan_s > 0 ? sim.requests / sim.makespan_s : 0;
}

double GpuSecondsSaved(const ResultRow& row, const ResultRow* none) {
  return none == nullptr ? 0 : none->sim.gpu_prefill_s - row.sim.gpu_prefill_s;
}

absl::Status Reporter::Open(const std::string& json_path, const std::string& csv_path) {
  json_path_ = json_path;
  csv_path_ = csv_path;
  if (!json_path.empty() && !std::ofstream(json_path, std::ios::trunc)) {
    return absl::InvalidArgumentError("--json: cannot write " + json_path);
  }
  if (!csv_path.empty() && !(std::ofstream(csv_path, std::ios::trunc) << kCsvHeader << "\n")) {
    return absl::InvalidArgumentError("--csv: cannot write " + csv_path);
  }
  return absl::OkStatus();
}

const ResultRow* Reporter::NoneRow(const std::string& workload) const {
  for (const ResultRow& r : rows_) {
    if (r.workload == workload && r.store == "none" && r.error.empty()) return &r;
  }
  return nullptr;
}

void Reporter::Add(std::ostream& out, ResultRow row) {
  if (rows_.empty()) PrintHeader(out);
  rows_.push_back(std::move(row));
  const ResultRow& r = rows_.back();
  const ResultRow* none = NoneRow(r.workload);
  const double saved = GpuSecondsSaved(r, none);
  if (!r.error.empty()) {
    out << absl::StrFormat("%-9s %-16s %-5s %5.2f %-8s %-18s %-3s  not run: %s\n", r.workload,
                           r.store, r.transport, r.capacity_fraction, r.policy, r.hints, r.advisor,
                           r.error);
  } else {
    out << absl::StrFormat(
        "%-9s %-16s %-5s %5.2f %-8s %-18s %-3s %5d %6.1f %6.1f %6.1f %6d %5.1f %8.1f %8.1f %8.1f "
        "%7.2f %9s %8.2f %8s %4d\n",
        r.workload, r.store, r.transport, r.capacity_fraction, r.policy, r.hints, r.advisor,
        r.sim.requests, 100 * r.EngineHitRatio(), 100 * r.DramHitRatio(), 100 * r.NvmeHitRatio(),
        r.sim.declined_chunks, 100 * r.PiExtraRatio(), 1e3 * r.TtftMean(),
        1e3 * r.TtftQuantile(0.5), 1e3 * r.TtftQuantile(0.99), r.RequestsPerSecond(),
        FormatBytes(r.sim.fetched_model_bytes + r.sim.put_model_bytes), r.sim.gpu_prefill_s,
        none != nullptr ? absl::StrFormat("%.2f", saved) : "-", r.sim.errors);
    if (!r.sim.first_error.empty()) out << "    first error: " << r.sim.first_error << "\n";
  }
  out.flush();
  if (!json_path_.empty()) std::ofstream(json_path_, std::ios::app) << JsonLine(r, none) << "\n";
  if (!csv_path_.empty()) std::ofstream(csv_path_, std::ios::app) << CsvLine(r, none) << "\n";
}

std::string Reporter::JsonLine(const ResultRow& r, const ResultRow* none) const {
  const std::string saved =
      none != nullptr ? absl::StrFormat("%.6f", GpuSecondsSaved(r, none)) : "null";
  return absl::StrFormat(
      R"({"workload":"%s","store":"%s","transport":"%s","capacity_fraction":%g,"policy":"%s",)"
      R"("hints":"%s","advisor":"%s","model":"%s","byte_scale":%g,"working_set_bytes":%d,)"
      R"("engine_capacity_chunks":%d,"store_capacity_bytes":%d,"requests":%d,"prompt_tokens":%d,)"
      R"("engine_hit_ratio":%.6f,"dram_hit_ratio":%.6f,"nvme_hit_ratio":%.6f,"declined_chunks":%d,)"
      R"("pi_extra_ratio":%.6f,"ttft_mean_ms":%.4f,"ttft_p50_ms":%.4f,"ttft_p99_ms":%.4f,)"
      R"("requests_per_s":%.4f,"fetched_bytes":%d,"put_bytes":%d,"wire_bytes":%d,"lookups":%d,)"
      R"("put_refused_chunks":%d,"gpu_prefill_s":%.6f,"gpu_s_saved":%s,"transfer_s":%.6f,)"
      R"("makespan_s":%.3f,"wall_s":%.3f,"max_lag_s":%.3f,"errors":%d,"kvstash_evictions":%d,)"
      R"("kvstash_demotions":%d,"kvstash_demotion_drops":%d,"kvstash_nvme_hits":%d,)"
      R"("advisor_dram_bytes_per_s":%.0f,"advisor_nvme_bytes_per_s":%.0f,"error":"%s"})",
      r.workload, r.store, r.transport, r.capacity_fraction, JsonEscape(r.policy), r.hints,
      r.advisor, r.model, r.byte_scale, r.working_set_bytes, r.engine_capacity_chunks,
      r.store_capacity_bytes, r.sim.requests, r.sim.prompt_tokens, r.EngineHitRatio(),
      r.DramHitRatio(), r.NvmeHitRatio(), r.sim.declined_chunks, r.PiExtraRatio(),
      1e3 * r.TtftMean(), 1e3 * r.TtftQuantile(0.5), 1e3 * r.TtftQuantile(0.99),
      r.RequestsPerSecond(), r.sim.fetched_model_bytes, r.sim.put_model_bytes, r.sim.wire_bytes,
      r.sim.lookups, r.sim.put_refused_chunks, r.sim.gpu_prefill_s, saved, r.sim.transfer_s,
      r.sim.makespan_s, r.sim.wall_s, r.sim.max_lag_s, r.sim.errors, r.kvstash.evictions,
      r.kvstash.demotions, r.kvstash.demotion_drops, r.kvstash.nvme_hits,
      r.advisor_dram_bytes_per_s, r.advisor_nvme_bytes_per_s,
      JsonEscape(r.error.empty() ? r.sim.first_error : r.error));
}

std::string Reporter::CsvLine(const ResultRow& r, const ResultRow* none) const {
  const std::string saved =
      none != nullptr ? absl::StrFormat("%.6f", GpuSecondsSaved(r, none)) : "";
  std::string error = r.error.empty() ? r.sim.first_error : r.error;
  std::replace(error.begin(), error.end(), ',', ';');
  std::replace(error.begin(), error.end(), '\n', ' ');
  return absl::StrFormat(
      "%s,%s,%s,%g,%s,%s,%s,%s,%g,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f,%d,%.6f,%.4f,%.4f,%.4f,%.4f,%d,"
      "%d,%d,"
      "%d,%d,%.6f,%s,%.6f,%.3f,%.3f,%.3f,%d,%d,%d,%d,%d,%.0f,%.0f,%s",
      r.workload, r.store, r.transport, r.capacity_fraction, r.policy, r.hints, r.advisor, r.model,
      r.byte_scale, r.working_set_bytes, r.engine_capacity_chunks, r.store_capacity_bytes,
      r.sim.requests, r.sim.prompt_tokens, r.EngineHitRatio(), r.DramHitRatio(), r.NvmeHitRatio(),
      r.sim.declined_chunks, r.PiExtraRatio(), 1e3 * r.TtftMean(), 1e3 * r.TtftQuantile(0.5),
      1e3 * r.TtftQuantile(0.99), r.RequestsPerSecond(), r.sim.fetched_model_bytes,
      r.sim.put_model_bytes, r.sim.wire_bytes, r.sim.lookups, r.sim.put_refused_chunks,
      r.sim.gpu_prefill_s, saved, r.sim.transfer_s, r.sim.makespan_s, r.sim.wall_s, r.sim.max_lag_s,
      r.sim.errors, r.kvstash.evictions, r.kvstash.demotions, r.kvstash.demotion_drops,
      r.kvstash.nvme_hits, r.advisor_dram_bytes_per_s, r.advisor_nvme_bytes_per_s, error);
}

}  // namespace kvstash::bench::workload
