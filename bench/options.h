// Command-line flags of kvstash_bench (see bench/README.md for the full list).
//
// Thread-safety: ParseOptions uses process-wide flags; call it from one thread (main).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/runner.h"

namespace kvstash::bench {

struct BenchOptions {
  RunConfig run;
  std::string json_path;  // --json; empty: no JSON
  bool nvme = false;      // --nvme: run the NVMe suite (nvme_suite.h) instead of the sweep
  bool scrape = false;    // --scrape: run the scrape suite (scrape_suite.h) instead
  int scrape_ms = 1000;   // --scrape_ms: the scraper's interval
  bool ucx = false;       // --ucx: run the UCX suite (ucx_suite.h) instead
  bool security = false;  // --security: run the security suite (security_suite.h) instead
  bool cluster = false;   // --cluster: run the cluster suite (cluster_suite.h) instead
  std::vector<std::string> transports = {"ucx-tcp", "ucx-shm"};  // --transport
  bool help = false;
};

// Parses argv: absl flags read with common/flags.h's grammar (`--flag=value` or `--flag
// value`; booleans as `--flag` or `--flag=false`). --quick changes
// the defaults of the flags that are not given explicitly. default_kvstashd is the daemon
// built alongside the benchmark.
absl::StatusOr<BenchOptions> ParseOptions(int argc, char** argv,
                                          const std::string& default_kvstashd);

std::string UsageText();

}  // namespace kvstash::bench
