// kvstash_workload: what kvstash saves an engine on workload traces, next to the engine's
// own prefix cache, Redis and memcached (bench/README.md, "Workloads").
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench/workload/options.h"
#include "bench/workload/plots.h"
#include "bench/workload/report.h"
#include "bench/workload/runner.h"

#ifndef KVSTASH_BENCH_KVSTASHD
#define KVSTASH_BENCH_KVSTASHD "kvstashd"
#endif

namespace kvstash::bench::workload {
namespace {

// A peer whose binary is not installed is skipped, not failed.
bool Skipped(const ResultRow& r) { return absl::StrContains(r.error, "not found (apt install"); }

int Main(int argc, char** argv) {
  absl::StatusOr<WorkloadOptions> options =
      ParseWorkloadOptions(argc, argv, KVSTASH_BENCH_KVSTASHD);
  if (!options.ok()) {
    std::cerr << "kvstash_workload: " << options.status().message() << "\n\n" << WorkloadUsage();
    return 2;
  }
  if (options->help) {
    std::cout << WorkloadUsage();
    return 0;
  }
  const WorkloadOptions& o = *options;
  std::cout << absl::StrFormat(
      "model %s: %d B/token, %d tokens/chunk; prefill %.0f tokens/s + %.3g s per token and "
      "cached token; decode %.1f tokens/s; speedup %g\n",
      o.model.name, o.model.kv_bytes_per_token, o.chunk_tokens, o.cost.prefill.tokens_per_s,
      o.cost.prefill.attention_s_per_token2, o.cost.decode_tokens_per_s, o.speedup);
  Reporter reporter;
  if (absl::Status s = reporter.Open(o.json_path, o.csv_path); !s.ok()) {
    std::cerr << "kvstash_workload: " << s.message() << "\n";
    return 2;
  }
  const absl::Time begin = absl::Now();
  SuiteRunner runner(o, &reporter, std::cout);
  absl::Status s = runner.Run();
  if (s.ok() && !o.plots_dir.empty()) s = DrawPlots(reporter.rows(), o.plots_dir, std::cout);
  std::cout << absl::StrFormat("\nrun time %.1f s\n", absl::ToDoubleSeconds(absl::Now() - begin));
  if (!s.ok()) {
    std::cerr << "kvstash_workload: " << s << "\n";
    return 1;
  }
  int failed = 0;
  for (const ResultRow& r : reporter.rows()) {
    if ((!r.error.empty() && !Skipped(r)) || r.sim.errors > 0) ++failed;
  }
  if (failed > 0) std::cerr << "kvstash_workload: " << failed << " runs failed (see the table)\n";
  return failed > 0 ? 1 : 0;
}

}  // namespace
}  // namespace kvstash::bench::workload

int main(int argc, char** argv) { return kvstash::bench::workload::Main(argc, argv); }
