// The report of the cluster benchmark (cluster_suite.h): ratios to one daemon, lookup
// spread over members against one member, convergence medians.
#include <algorithm>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/cluster_suite.h"

namespace kvstash::bench {
namespace {

const Row* Find(const std::vector<Row>& rows, const std::string& transport, const Row& like) {
  for (const Row& r : rows) {
    if (r.transport == transport && r.op == like.op && r.chunk_bytes == like.chunk_bytes &&
        r.clients == like.clients && r.rounds > 0) {
      return &r;
    }
  }
  return nullptr;
}

void PrintThroughputRatios(std::ostream& out, const std::vector<Row>& rows) {
  out << "\n== aggregate throughput / one daemon (GB/s, medians) ==\n";
  out << absl::StrFormat("%-4s %-8s %7s %8s %8s %8s %8s %9s %9s %10s\n", "op", "size", "clients",
                         "grpc", "cluster1", "cluster2", "cluster3", "2/1", "3/1", "cluster1/grpc");
  for (const Row& r : rows) {
    if (r.transport != "cluster1" || r.op == Op::kLookup || r.rounds == 0) continue;
    const Row* direct = Find(rows, "grpc", r);
    const Row* two = Find(rows, "cluster2", r);
    const Row* three = Find(rows, "cluster3", r);
    auto gbps = [](const Row* x) { return x == nullptr ? 0.0 : x->gbps; };
    auto ratio = [&](const Row* x) { return r.gbps > 0 ? gbps(x) / r.gbps : 0.0; };
    out << absl::StrFormat("%-4s %-8s %7d %8.3f %8.3f %8.3f %8.3f %8.2fx %8.2fx %9.2fx\n",
                           OpName(r.op), FormatBytes(r.chunk_bytes), r.clients, gbps(direct),
                           r.gbps, gbps(two), gbps(three), ratio(two), ratio(three),
                           gbps(direct) > 0 ? r.gbps / gbps(direct) : 0.0);
  }
}

void PrintLookupRatios(std::ostream& out, const std::vector<Row>& rows) {
  const Row* one = nullptr;
  for (const Row& r : rows) {
    if (r.op == Op::kLookup && r.transport == "cluster1" && r.rounds > 0) one = &r;
  }
  if (one == nullptr) return;
  out << "\n== Lookup of " << one->keys_per_op
      << " chunks: spread over 3 members / all on one (p50, medians) ==\n";
  for (const char* t : {"grpc", "cluster1", "cluster3"}) {
    const Row* r = Find(rows, t, *one);
    if (r == nullptr) continue;
    out << absl::StrFormat("%-9s p50 %8.0f us  p99 %8.0f us  %7.0f lookups/s  %5.2fx cluster1\n", t,
                           r->p50_us, r->p99_us, r->ops_per_s, r->p50_us / one->p50_us);
  }
}

// Medians of the convergence samples per lease TTL.
struct Converged {
  int runs = 0;
  double dropped_s = 0, dropped_min_s = 0, dropped_max_s = 0, rejoined_s = 0;
  double client_dropped_s = -1;  // median; -1: not measured
  bool timed_out = false;
};

std::map<int, Converged> ConvergenceByTtl(const std::vector<ConvergenceSample>& samples) {
  std::map<int, std::vector<const ConvergenceSample*>> by_ttl;
  for (const ConvergenceSample& c : samples) by_ttl[c.lease_ttl_s].push_back(&c);
  std::map<int, Converged> out;
  for (const auto& [ttl, v] : by_ttl) {
    std::vector<double> dropped, rejoined, client;
    Converged c;
    for (const ConvergenceSample* s : v) {
      if (s->dropped_s < 0) c.timed_out = true;
      dropped.push_back(s->dropped_s);
      rejoined.push_back(s->rejoined_s);
      if (s->client_dropped_s >= 0) client.push_back(s->client_dropped_s);
    }
    if (!client.empty()) c.client_dropped_s = Median(client);
    c.runs = static_cast<int>(v.size());
    c.dropped_s = Median(dropped);
    c.dropped_min_s = *std::min_element(dropped.begin(), dropped.end());
    c.dropped_max_s = *std::max_element(dropped.begin(), dropped.end());
    c.rejoined_s = Median(rejoined);
    out[ttl] = c;
  }
  return out;
}

}  // namespace

void PrintClusterReport(std::ostream& out, const ClusterSuiteOutput& suite,
                        const std::vector<Row>& rows) {
  out << "cluster clients: " << suite.client_kind << "\n";
  PrintResultTable(out, rows);
  PrintThroughputRatios(out, rows);
  PrintLookupRatios(out, rows);
  if (!suite.cores_busy.empty()) {
    out << "\n== CPU cores busy during get+put cells (daemons + client, medians) ==\n";
    for (const auto& [label, cores] : suite.cores_busy) {
      out << absl::StrFormat("%-32s %5.2f\n", label, cores);
    }
  }
  if (suite.convergence.empty()) return;
  out << "\n== convergence after kill -9 of one member of 3 (seconds, medians) ==\n";
  for (const auto& [ttl, c] : ConvergenceByTtl(suite.convergence)) {
    out << absl::StrFormat(
        "lease_ttl_s %3d: dropped from the member set %6.2f s (min %.2f, max %.2f%s), "
        "listed again %.2f s after its restart; %d runs, polled every %.0f ms\n",
        ttl, c.dropped_s, c.dropped_min_s, c.dropped_max_s, c.timed_out ? ", some timed out" : "",
        c.rejoined_s, c.runs, 1000 * suite.convergence.front().poll_interval_s);
    if (c.client_dropped_s >= 0) {
      out << absl::StrFormat("                 the etcd:// client dropped it after %.2f s\n",
                             c.client_dropped_s);
    }
  }
}

absl::Status WriteClusterJsonLines(const std::string& path, const ClusterSuiteOutput& suite,
                                   const std::vector<Row>& rows) {
  std::vector<Row> tagged = rows;
  for (Row& r : tagged)
    absl::StrAppend(&r.json_extra, ",\"client\":\"", JsonEscape(suite.client_kind), "\"");
  if (absl::Status s = WriteJsonLines(path, tagged, RssResult{}); !s.ok()) return s;
  std::ofstream f(path, std::ios::app);
  for (const auto& [label, cores] : suite.cores_busy) {
    f << absl::StrFormat(
        "{\"system\":\"kvstash\",\"op\":\"cores_busy\",\"cell\":\"%s\",\"cores\":%.3f}\n", label,
        cores);
  }
  for (const auto& [ttl, c] : ConvergenceByTtl(suite.convergence)) {
    std::vector<std::string> each;
    for (const ConvergenceSample& s : suite.convergence) {
      if (s.lease_ttl_s == ttl) each.push_back(absl::StrFormat("%.3f", s.dropped_s));
    }
    f << absl::StrFormat(
        "{\"system\":\"kvstash\",\"op\":\"converge\",\"members\":3,\"lease_ttl_s\":%d,"
        "\"runs\":%d,\"dropped_s\":%.3f,\"dropped_min_s\":%.3f,\"dropped_max_s\":%.3f,"
        "\"rejoined_s\":%.3f,\"client_dropped_s\":%.3f,\"dropped_s_each\":[%s]}\n",
        ttl, c.runs, c.dropped_s, c.dropped_min_s, c.dropped_max_s, c.rejoined_s,
        c.client_dropped_s, absl::StrJoin(each, ","));
  }
  return f.good() ? absl::OkStatus() : absl::InternalError("cannot append to " + path);
}

}  // namespace kvstash::bench
