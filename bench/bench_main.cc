// kvstash_bench: put/get throughput and latency of kvstashd over gRPC next to Redis and
// memcached on loopback, lookup latency of 1,000-chunk prompts, and the daemon's peak RSS
// against its DRAM budget. See bench/README.md.
#include <signal.h>

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_join.h"
#include "bench/nvme_suite.h"
#ifdef KVSTASH_BENCH_CLUSTER
#include "bench/cluster_suite.h"
#endif
#include "bench/options.h"
#include "bench/report.h"
#include "bench/runner.h"
#include "bench/scrape_suite.h"
#include "bench/security_suite.h"
#include "bench/ucx_suite.h"

#ifndef KVSTASH_BENCH_KVSTASHD
#define KVSTASH_BENCH_KVSTASHD "kvstashd"
#endif
#ifndef KVSTASH_BENCH_BUILD_TYPE
#define KVSTASH_BENCH_BUILD_TYPE "unknown"
#endif

namespace kvstash::bench {
namespace {

// SIGINT/SIGTERM end the program through exit(), which runs no destructors of the main
// thread's stack; the children still die with us through PR_SET_PDEATHSIG (process.h).
// Stopping them gracefully is not worth the complexity for a benchmark.
void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = [](int sig) { _exit(128 + sig); };
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

void PrintHeader(const BenchOptions& o) {
  const RunConfig& r = o.run;
  std::vector<std::string> sizes;
  for (size_t s : r.sizes) sizes.push_back(FormatBytes(s));
  std::cout << "kvstash_bench: systems " << absl::StrJoin(r.systems, ",") << "; sizes "
            << absl::StrJoin(sizes, ",") << "; clients " << absl::StrJoin(r.clients, ",")
            << "; rounds " << r.rounds << "; " << r.limits.seconds << " s/cell; DRAM budget "
            << FormatBytes(r.budget_bytes) << "; build " << KVSTASH_BENCH_BUILD_TYPE << "\n";
}

int RunNvme(const BenchOptions& o) {
  std::cout << "kvstash_bench --nvme: rounds " << o.run.rounds << "; " << o.run.limits.seconds
            << " s/cell; build " << KVSTASH_BENCH_BUILD_TYPE << "\n";
  absl::StatusOr<NvmeSuiteOutput> out = RunNvmeSuite(o.run, std::cerr);
  if (!out.ok()) {
    std::cerr << "kvstash_bench: " << out.status() << "\n";
    return 1;
  }
  std::cout << "\n== NVMe results (median of " << o.run.rounds << " rounds) ==\n";
  PrintNvmeRows(std::cout, out->rows);
  std::cout << "\n== NVMe targets ==\n";
  PrintNvmeTargets(std::cout, *out);
  for (const std::string& note : out->notes) std::cout << "note: " << note << "\n";
  if (o.json_path.empty()) return 0;
  absl::Status s = WriteNvmeJsonLines(o.json_path, out->rows);
  if (!s.ok()) {
    std::cerr << "kvstash_bench: " << s << "\n";
    return 1;
  }
  std::cout << "JSON lines appended to " << o.json_path << "\n";
  return 0;
}

int RunScrape(const BenchOptions& o) {
  BenchOptions header = o;
  header.run.systems = {"kvstash", kScrapedSystem};
  PrintHeader(header);
  absl::StatusOr<ScrapeSuiteOutput> out = RunScrapeSuite(o.run, o.scrape_ms, std::cerr);
  if (!out.ok()) {
    std::cerr << "kvstash_bench: " << out.status() << "\n";
    return 1;
  }
  std::cout << "\n== kvstash with and without a /metrics scrape every " << o.scrape_ms
            << " ms (median of " << o.run.rounds << " rounds) ==\n";
  PrintScrapeReport(std::cout, *out, o.scrape_ms);
  for (const std::string& note : out->notes) std::cout << "note: " << note << "\n";
  if (o.json_path.empty()) return 0;
  absl::Status s = WriteScrapeJsonLines(o.json_path, *out, o.scrape_ms);
  if (!s.ok()) {
    std::cerr << "kvstash_bench: " << s << "\n";
    return 1;
  }
  std::cout << "JSON lines written to " << o.json_path << "\n";
  return 0;
}

// A suite's medians printed by `print` under "== `title` results", its notes, and its
// JSON lines when asked for. Returns the exit code.
template <typename Output>
int ReportSuite(const BenchOptions& o, const absl::StatusOr<Output>& out, const char* title,
                void (*print)(std::ostream&, const std::vector<Row>&)) {
  if (!out.ok()) {
    std::cerr << "kvstash_bench: " << out.status() << "\n";
    return 1;
  }
  std::vector<Row> rows = MedianRows(out->samples);
  std::cout << "\n== " << title << " results (median of " << o.run.rounds << " rounds) ==\n";
  print(std::cout, rows);
  for (const std::string& note : out->notes) std::cout << "note: " << note << "\n";
  if (o.json_path.empty()) return 0;
  if (absl::Status s = WriteJsonLines(o.json_path, rows, RssResult{}); !s.ok()) {
    std::cerr << "kvstash_bench: " << s << "\n";
    return 1;
  }
  std::cout << "JSON lines written to " << o.json_path << "\n";
  return 0;
}

int RunUcx(const BenchOptions& o) {
  BenchOptions header = o;
  header.run.systems = {"kvstash(" + absl::StrJoin(o.transports, ",") + ")", "ucx_perftest",
                        "ucx_perftest -e", "memcached"};
  PrintHeader(header);
  return ReportSuite(o, RunUcxSuite(o.run, o.transports, std::cerr), "UCX", PrintUcxReport);
}

int RunSecurity(const BenchOptions& o) {
  BenchOptions header = o;
  header.run.systems = {"kvstash (grpc, grpc+tls, grpc+tls+token, ucx-tcp, ucx-tcp+token)"};
  PrintHeader(header);
  return ReportSuite(o, RunSecuritySuite(o.run, std::cerr), "security", PrintSecurityReport);
}

int RunCluster(const BenchOptions& o) {
#ifdef KVSTASH_BENCH_CLUSTER
  BenchOptions header = o;
  header.run.systems = {"kvstash (one daemon; clusters of 1, 2, 3 in etcd)"};
  PrintHeader(header);
  absl::StatusOr<ClusterSuiteOutput> out = RunClusterSuite(o.run, std::cerr);
  if (!out.ok()) {
    std::cerr << "kvstash_bench: " << out.status() << "\n";
    return 1;
  }
  std::vector<Row> rows = MedianRows(out->samples);
  std::cout << "\n== cluster results (median of " << o.run.rounds << " rounds) ==\n";
  PrintClusterReport(std::cout, *out, rows);
  for (const std::string& note : out->notes) std::cout << "note: " << note << "\n";
  if (o.json_path.empty()) return 0;
  if (absl::Status s = WriteClusterJsonLines(o.json_path, *out, rows); !s.ok()) {
    std::cerr << "kvstash_bench: " << s << "\n";
    return 1;
  }
  std::cout << "JSON lines written to " << o.json_path << "\n";
  return 0;
#else
  std::cerr << "kvstash_bench: built without cluster/ (no --cluster)\n";
  return 2;
#endif
}

int Main(int argc, char** argv) {
  absl::StatusOr<BenchOptions> options = ParseOptions(argc, argv, KVSTASH_BENCH_KVSTASHD);
  if (!options.ok()) {
    std::cerr << "kvstash_bench: " << options.status().message() << "\n\n" << UsageText();
    return 2;
  }
  if (options->help) {
    std::cout << UsageText();
    return 0;
  }
  InstallSignalHandlers();
  if (options->nvme) return RunNvme(*options);
  if (options->scrape) return RunScrape(*options);
  if (options->ucx) return RunUcx(*options);
  if (options->security) return RunSecurity(*options);
  if (options->cluster) return RunCluster(*options);
  PrintHeader(*options);
  absl::StatusOr<RunOutput> out = RunBenchmark(options->run, std::cerr);
  if (!out.ok()) {
    std::cerr << "kvstash_bench: " << out.status() << "\n";
    return 1;
  }
  std::vector<Row> rows = MedianRows(out->samples);
  std::cout << "\n== results (median of " << options->run.rounds << " rounds) ==\n";
  PrintResultTable(std::cout, rows);
  std::cout << "\n== kvstash / peer (GB/s; lookups/s for lookup) ==\n";
  PrintRatioTable(std::cout, rows);
  std::cout << "\n== kvstashd memory ==\n";
  PrintRss(std::cout, out->rss);
  std::cout << "\n== targets ==\n";
  PrintTargets(std::cout, rows, out->rss);
  for (const std::string& note : out->notes) std::cout << "note: " << note << "\n";
  if (!options->json_path.empty()) {
    absl::Status s = WriteJsonLines(options->json_path, rows, out->rss);
    if (!s.ok()) {
      std::cerr << "kvstash_bench: " << s << "\n";
      return 1;
    }
    std::cout << "JSON lines written to " << options->json_path << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace kvstash::bench

int main(int argc, char** argv) { return kvstash::bench::Main(argc, argv); }
