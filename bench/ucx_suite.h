// The UCX benchmark (`kvstash_bench --ucx`): kvstashd's UCX data plane next to its limit
// and a peer, in the same run. For each transport of --transport (ucx-tcp: UCX_TLS=tcp,
// ucx-shm: UCX_TLS=sm,self) one kvstashd serves ucx:// clients; per round, size and
// client count the cells run interleaved (transports rotated per round):
//   kvstash get/put over UCX         system "kvstash",      transport ucx-tcp | ucx-shm
//   kvstash over server.local_socket (gets from the arena the local arena socket hands
//   over, puts over gRPC)            system "kvstash",      transport local
//   memcached GET/SET (its TCP text protocol)  system "memcached", transport "tcp"
//   ucx_perftest -t tag_bw, one pair, same UCX_TLS and message size (the limit; the same
//   number is recorded for get and put)       system "ucx_perftest", transport ucx-*
//   the same with -e (endpoints with peer error handling, the mode kvstash's endpoints
//   use)                                       system "ucx_perftest-e", transport ucx-*
// The report shows medians over the rounds, kvstash / ucx_perftest and kvstash /
// memcached ratios, and the target checks.
//
// Thread-safety: RunUcxSuite is called once, from the main thread.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/report.h"
#include "bench/runner.h"

namespace kvstash::bench {

struct UcxSuiteOutput {
  std::vector<Sample> samples;
  std::vector<std::string> notes;
};

// Uses config.sizes, clients, rounds, limits, budget_bytes (capped at 2 GiB per daemon),
// working_set_bytes, kvstashd_path, kvstash_sets, memcached_path and keep_scratch.
// `transports`: any of "ucx-tcp", "ucx-shm", "local".
absl::StatusOr<UcxSuiteOutput> RunUcxSuite(const RunConfig& config,
                                           const std::vector<std::string>& transports,
                                           std::ostream& progress);

// Medians, ratio table and target checks.
void PrintUcxReport(std::ostream& out, const std::vector<Row>& rows);

}  // namespace kvstash::bench
