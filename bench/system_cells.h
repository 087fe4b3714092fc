// The get and put cells of one system, shared by the suites that interleave several
// systems or configurations per round (ucx_suite.h, security_suite.h): a pool of
// connections kept for the whole run, the get working set, and one cell pair.
//
// Thread-safety: used by the main thread; RunCell drives the worker threads itself.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "bench/runner.h"
#include "bench/systems.h"
#include "bench/workload.h"

namespace kvstash::bench {

// The connections of each system, opened on first use and kept for the whole run, as an
// engine keeps its own. What a connection pays once (a same-host kvstash client maps the
// daemon's arena into its address space as it first writes each part, ~0.15-0.25 ms per MiB
// on the build hosts) then lands in the first round, and the median of several rounds is
// the steady state.
class ConnPool {
 public:
  // Closes the connections to `system` (it was restarted).
  void Forget(System& system) { open_.erase(&system); }

  // The first `n` connections to `system`, opening those missing.
  absl::StatusOr<std::vector<Conn*>> Get(System& system, int n) {
    std::vector<std::unique_ptr<Conn>>& open = open_[&system];
    while (open.size() < static_cast<size_t>(n)) {
      absl::StatusOr<std::unique_ptr<Conn>> c = system.NewConn();
      if (!c.ok()) return c.status();
      open.push_back(*std::move(c));
    }
    std::vector<Conn*> conns;
    for (int i = 0; i < n; ++i) conns.push_back(open[i].get());
    return conns;
  }

 private:
  std::map<System*, std::vector<std::unique_ptr<Conn>>> open_;
};

struct CellSpec {
  size_t size;
  int clients;
  const std::vector<BenchKey>* working_set;
  absl::Span<const char> value;
  uint64_t put_space;  // fresh keys for put cells
  // Servers that must be idle before each cell starts (see SettleServers).
  const std::vector<pid_t>* servers;
};

// Runs the get cell and the put cell of `system` and appends both samples; a failure to
// connect or to store the working set becomes a note instead.
void RunSystemCells(System& system, const CellSpec& cell, const CellLimits& limits, ConnPool* pool,
                    std::vector<Sample>* out, std::vector<std::string>* notes);

}  // namespace kvstash::bench
