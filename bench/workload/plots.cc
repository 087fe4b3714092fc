#include "bench/workload/plots.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "testing/subprocess.h"

namespace kvstash::bench::workload {
namespace {

std::string SeriesName(const ResultRow& r) {
  std::string name = r.store;
  if (r.policy != "default" && r.policy != "-") absl::StrAppend(&name, " ", r.policy);
  if (r.hints != "none") absl::StrAppend(&name, " ", r.hints);
  if (r.advisor == "off") absl::StrAppend(&name, " advisor off");
  return name;
}

// TTFT CDF of every store at the first capacity (and of none).
void TtftCdf(const std::vector<const ResultRow*>& rows, const std::string& workload,
             const std::string& dir, std::ostream& gp) {
  double first_capacity = -1;
  std::vector<std::string> plots;
  for (const ResultRow* r : rows) {
    if (r->store != "none") {
      if (first_capacity < 0) first_capacity = r->capacity_fraction;
      if (r->capacity_fraction != first_capacity) continue;
    }
    const std::string data = absl::StrCat(dir, "/ttft_", workload, "_", plots.size(), ".dat");
    std::vector<double> ttft = r->sim.ttft_s;
    std::sort(ttft.begin(), ttft.end());
    std::ofstream f(data);
    for (size_t i = 0; i < ttft.size(); ++i)
      f << 1e3 * ttft[i] << " " << (i + 1.0) / ttft.size() << "\n";
    plots.push_back(absl::StrCat("'", data, "' using 1:2 with steps title '", SeriesName(*r), "'"));
  }
  gp << "set output '" << dir << "/ttft_cdf_" << workload << ".png'\n"
     << "set title '" << workload << ": TTFT CDF"
     << (first_capacity >= 0 ? absl::StrCat(", store capacity ", first_capacity, " of working set")
                             : "")
     << "'\nset xlabel 'TTFT (ms)'\nset ylabel 'fraction of requests'\nset logscale x\n"
     << "set key bottom right\nplot " << absl::StrJoin(plots, ", \\\n  ") << "\nunset logscale x\n";
}

// Hit ratio (engine + store tiers) against the store's capacity, one line per variant.
void HitVsCapacity(const std::vector<const ResultRow*>& rows, const std::string& workload,
                   const std::string& dir, std::ostream& gp) {
  std::map<std::string, std::vector<const ResultRow*>> series;
  double none_ratio = -1;
  for (const ResultRow* r : rows) {
    if (r->store == "none") {
      none_ratio = r->EngineHitRatio();
    } else {
      series[SeriesName(*r)].push_back(r);
    }
  }
  std::vector<std::string> plots;
  for (const auto& [name, points] : series) {
    const std::string data = absl::StrCat(dir, "/hits_", workload, "_", plots.size(), ".dat");
    std::ofstream f(data);
    for (const ResultRow* r : points) {
      f << r->capacity_fraction << " "
        << r->EngineHitRatio() + r->DramHitRatio() + r->NvmeHitRatio() << "\n";
    }
    plots.push_back(absl::StrCat("'", data, "' using 1:2 with linespoints title '", name, "'"));
  }
  if (none_ratio >= 0)
    plots.push_back(absl::StrCat(none_ratio, " with lines dashtype 2 title 'none (engine cache)'"));
  if (plots.empty()) return;
  gp << "set output '" << dir << "/hit_ratio_" << workload << ".png'\n"
     << "set title '" << workload << ": hit ratio (engine + store) vs store capacity'\n"
     << "set xlabel 'store capacity / working set'\nset ylabel 'prompt tokens not recomputed'\n"
     << "set yrange [0:1]\nset key bottom right\nplot " << absl::StrJoin(plots, ", \\\n  ")
     << "\nset autoscale y\n";
}

}  // namespace

absl::Status DrawPlots(const std::vector<ResultRow>& rows, const std::string& dir,
                       std::ostream& out) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InvalidArgumentError("--plots: cannot create " + dir);
  }
  const std::string script = dir + "/plots.gp";
  {
    std::ofstream gp(script);
    if (!gp) return absl::InvalidArgumentError("--plots: cannot write " + script);
    gp << "set terminal pngcairo size 900,600 noenhanced\nset grid\n";
    std::vector<std::string> workloads;
    for (const ResultRow& r : rows) {
      if (std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end()) {
        workloads.push_back(r.workload);
      }
    }
    for (const std::string& w : workloads) {
      std::vector<const ResultRow*> mine;
      for (const ResultRow& r : rows) {
        if (r.workload == w && r.error.empty()) mine.push_back(&r);
      }
      TtftCdf(mine, w, dir, gp);
      HitVsCapacity(mine, w, dir, gp);
    }
  }
  const std::string gnuplot = FindExecutable("gnuplot");
  if (gnuplot.empty()) {
    out << "plots skipped: gnuplot not found (apt install gnuplot-nox); script in " << script
        << "\n";
    return absl::OkStatus();
  }
  SpawnOptions spawn;
  spawn.argv = {gnuplot, script};
  spawn.output_path = dir + "/gnuplot.log";
  auto child = Subprocess::Spawn(spawn);
  if (!child.ok()) return child.status();
  absl::StatusOr<ExitInfo> exit = (*child)->Wait(absl::Now() + absl::Seconds(120));
  if (!exit.ok()) return exit.status();
  out << "plots: " << dir << "/*.png (" << exit->ToString() << "; log " << spawn.output_path
      << ")\n";
  return absl::OkStatus();
}

}  // namespace kvstash::bench::workload
