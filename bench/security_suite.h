// The security benchmark (`kvstash_bench --security`): what transport security costs on
// the data path, measured in one run. One kvstashd per configuration, each cell (size x
// clients, get and put) run for every configuration per round in rotated order:
//   transport "grpc"            gRPC, plaintext, no token
//   transport "grpc+tls"        gRPC over TLS (certificates made by openssl at start)
//   transport "grpc+tls+token"  the same, every call carrying a token (auth.required)
//   transport "grpc-local"      gRPC over server.local_socket (unix://), plaintext
//   transport "ucx-tcp"         UCX over TCP, no token
//   transport "ucx-tcp+token"   the same with a token in the Hello (auth.required)
// The report shows medians over the rounds and secured (or local) / plain ratios; targets:
// gRPC with TLS (and token) >= 0.9x plaintext, the local socket >= 1x loopback TCP, UCX
// with tokens unchanged within noise.
//
// Thread-safety: RunSecuritySuite is called once, from the main thread.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/report.h"
#include "bench/runner.h"

namespace kvstash::bench {

struct SecuritySuiteOutput {
  std::vector<Sample> samples;
  std::vector<std::string> notes;  // configurations skipped, and why
};

// Uses config.sizes, clients, rounds, limits, budget_bytes (capped at 2 GiB per daemon),
// working_set_bytes, kvstashd_path, kvstash_sets and keep_scratch.
absl::StatusOr<SecuritySuiteOutput> RunSecuritySuite(const RunConfig& config,
                                                     std::ostream& progress);

// Medians, secured / plain ratio table and target checks.
void PrintSecurityReport(std::ostream& out, const std::vector<Row>& rows);

}  // namespace kvstash::bench
