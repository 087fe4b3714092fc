// The cluster benchmark (`kvstash_bench --cluster`, bench/cluster.md): a real etcd and
// kvstashd members registered in it, all on loopback, measured in one run:
//   - get and put throughput of one client shared by --clients threads against clusters of
//     1, 2 and 3 daemons (transports "cluster1".."cluster3"), and the same client straight
//     to one daemon ("grpc"), cells interleaved per round;
//   - Lookup of a --lookup_keys-chunk prompt (1,000 by default, one client thread) spread
//     over 3 members against all of it on one;
//   - convergence after kill -9 of one member of 3, with cluster.lease_ttl_s=2 and with
//     the default: seconds until etcd's member set drops it (what every client follows)
//     and until a cluster client of the library dropped it, and until it is listed again
//     after its restart.
// Medians over --rounds; the report prints the ratios to one daemon.
//
// Thread-safety: RunClusterSuite is called once, from the main thread.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/report.h"
#include "bench/runner.h"

namespace kvstash::bench {

// One kill -9 of a member and what followed, in seconds.
struct ConvergenceSample {
  int lease_ttl_s = 0;    // the members' cluster.lease_ttl_s
  double dropped_s = 0;   // kill -9 until etcd no longer lists the member
  double rejoined_s = 0;  // its restart until etcd lists it again
  // kill -9 until a library cluster client (etcd://) no longer has it in its member set
  // (and so stops calling it); -1 when it did not within the wait.
  double client_dropped_s = -1;
  double poll_interval_s = 0;  // resolution of all three
};

struct ClusterSuiteOutput {
  std::vector<Sample> samples;
  std::vector<ConvergenceSample> convergence;
  // Median CPU cores busy (daemons + this process) per cell label "transport op size
  // clients": on a host without idle cores, what limits the throughput.
  std::vector<std::pair<std::string, double>> cores_busy;
  std::string client_kind;  // how the cluster clients placed chunks
  std::vector<std::string> notes;
};

// Uses config.sizes, clients, rounds, limits, budget_bytes (capped at 1 GiB per daemon),
// working_set_bytes, lookup_keys, kvstashd_path, kvstash_sets and keep_scratch.
absl::StatusOr<ClusterSuiteOutput> RunClusterSuite(const RunConfig& config, std::ostream& progress);

// Medians, the ratio tables and the convergence times.
void PrintClusterReport(std::ostream& out, const ClusterSuiteOutput& suite,
                        const std::vector<Row>& rows);

// The rows, then one "converge" line per lease TTL (medians).
absl::Status WriteClusterJsonLines(const std::string& path, const ClusterSuiteOutput& suite,
                                   const std::vector<Row>& rows);

}  // namespace kvstash::bench
