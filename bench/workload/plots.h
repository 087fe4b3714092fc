// PNG plots of a run, drawn by gnuplot (Debian: gnuplot-nox): per workload, the TTFT CDF of
// every store at the first capacity, and the hit ratio against the store's capacity. The
// data files and the gnuplot script stay in the directory, so a plot can be redrawn.
//
// Thread-safety: call from one thread.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/workload/report.h"

namespace kvstash::bench::workload {

// Writes DIR/plots.gp and its data, then runs gnuplot on it. Without gnuplot, says so on
// `out` and returns OK (the script is still written).
absl::Status DrawPlots(const std::vector<ResultRow>& rows, const std::string& dir,
                       std::ostream& out);

}  // namespace kvstash::bench::workload
