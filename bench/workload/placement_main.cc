// kvstash_placement_study: chunk key vs prompt chain as the unit of cluster placement, on
// the workload traces, without daemons (placement_study.h; bench/cluster.md).
#include <fstream>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/workload/placement_study.h"
#include "common/flags.h"

ABSL_FLAG(std::string, workloads, "chat,analytics,code,rag,agents,docqa", "workloads");
ABSL_FLAG(std::string, bursty, "chat,agents",
          "workloads also replayed with bursty session arrivals (empty: none)");
ABSL_FLAG(double, burst_cv, 4, "coefficient of variation of bursty inter-arrivals");
ABSL_FLAG(std::string, members, "3,8", "member counts");
ABSL_FLAG(std::string, segments, "8", "group sizes of the segment units (empty: none)");
ABSL_FLAG(int32_t, hot_replicas, 2,
          "copies of the hottest 1% of chunks in the chunk+hot unit (below 2: no such unit)");
ABSL_FLAG(int32_t, chunk_tokens, 256, "tokens per chunk");
ABSL_FLAG(int64_t, kv_bytes_per_token, 131072, "stored bytes per token (Llama-3-8B fp16)");
ABSL_FLAG(double, window_s, 10, "trace seconds per window of the busiest-window imbalance");
ABSL_FLAG(int64_t, seed, 1, "trace seed");
ABSL_FLAG(std::string, json, "", "JSON lines output");

namespace kvstash::bench::workload {
namespace {

// One replayed trace: a workload with its arrivals.
struct Case {
  WorkloadKind kind;
  Arrivals arrivals;
  std::string Name() const {
    return absl::StrCat(WorkloadName(kind), arrivals == Arrivals::kBursty ? "-bursty" : "");
  }
};

struct StudyFlags {
  std::vector<Case> cases;
  std::vector<int> members;
  std::vector<PlacementUnit> units;
  PlacementStudyOptions study;
  TraceOptions trace;
  std::string json_path;
};

absl::StatusOr<std::vector<int>> Ints(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  for (absl::string_view s : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int v = 0;
    if (!absl::SimpleAtoi(s, &v) || v <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": bad count '", s, "'"));
    }
    out.push_back(v);
  }
  return out;
}

absl::Status AddCases(const std::string& list, Arrivals arrivals, std::vector<Case>* cases) {
  for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    absl::StatusOr<WorkloadKind> kind = ParseWorkload(name);
    if (!kind.ok()) return kind.status();
    cases->push_back({*kind, arrivals});
  }
  return absl::OkStatus();
}

absl::StatusOr<StudyFlags> Parse(int argc, char** argv, bool* help) {
  FlagParseOptions parse;
  parse.defined_in = "bench/workload/placement_main.cc";
  absl::StatusOr<ParsedFlags> parsed = ParseFlags(argc, argv, parse);
  if (!parsed.ok()) return parsed.status();
  *help = parsed->help;
  StudyFlags f;
  if (absl::Status s = AddCases(absl::GetFlag(FLAGS_workloads), Arrivals::kPoisson, &f.cases);
      !s.ok())
    return s;
  if (absl::Status s = AddCases(absl::GetFlag(FLAGS_bursty), Arrivals::kBursty, &f.cases); !s.ok())
    return s;
  absl::StatusOr<std::vector<int>> members = Ints("members", absl::GetFlag(FLAGS_members));
  absl::StatusOr<std::vector<int>> segments = Ints("segments", absl::GetFlag(FLAGS_segments));
  if (!members.ok()) return members.status();
  if (!segments.ok()) return segments.status();
  f.members = *members;
  f.units = {{1}, {0}};
  for (int s : *segments) f.units.push_back({static_cast<uint32_t>(s)});
  if (const int32_t r = absl::GetFlag(FLAGS_hot_replicas); r > 1) {
    f.units.push_back({1, static_cast<uint32_t>(r)});
  }
  const int32_t chunk_tokens = absl::GetFlag(FLAGS_chunk_tokens);
  if (chunk_tokens <= 0) return absl::InvalidArgumentError("--chunk_tokens: must be > 0");
  f.trace.chunk_tokens = static_cast<uint32_t>(chunk_tokens);
  f.trace.seed = static_cast<uint64_t>(absl::GetFlag(FLAGS_seed));
  f.trace.burst_cv = absl::GetFlag(FLAGS_burst_cv);
  f.study.window_s = absl::GetFlag(FLAGS_window_s);
  f.study.chunk_bytes = static_cast<uint64_t>(absl::GetFlag(FLAGS_kv_bytes_per_token)) *
                        static_cast<uint64_t>(chunk_tokens);
  f.json_path = absl::GetFlag(FLAGS_json);
  return f;
}

void PrintHeader() {
  std::cout << absl::StrFormat("%-16s %2s %-9s %8s %6s %8s %8s %7s %6s %6s %6s %6s %6s\n",
                               "workload", "N", "unit", "req", "hot%", "bytes", "busiest",
                               "members", "p99", "share", "fetch", "kept", "top1%");
}

void PrintRow(const std::string& name, const PlacementResult& r) {
  std::cout << absl::StrFormat(
      "%-16s %2d %-9s %7.2fx %5.1f%% %7.2fx %7.2fx %7.2f %6.0f %6.2f %6.2f %5.1f%% %5.1f%%\n", name,
      r.members, r.unit, r.requests_max_over_mean, 100 * r.hottest_share, r.bytes_max_over_mean,
      r.busiest_window_max_over_mean, r.lookup_members_mean, r.lookup_members_p99,
      r.lookup_max_share_mean, r.fetch_members_mean, 100 * r.hits_kept_after_loss,
      100 * r.top_percent_share);
}

std::string JsonLine(const Case& c, const PlacementResult& r, uint64_t chunk_bytes) {
  return absl::StrFormat(
      "{\"study\":\"placement\",\"workload\":\"%s\",\"arrivals\":\"%s\",\"members\":%d,"
      "\"unit\":\"%s\",\"requests\":%d,\"lookups\":%d,\"chunk_requests\":%d,"
      "\"chunks_stored\":%d,\"bytes_stored\":%d,\"requests_max_over_mean\":%.4f,"
      "\"hottest_share\":%.4f,\"bytes_max_over_mean\":%.4f,"
      "\"busiest_window_max_over_mean\":%.4f,\"lookup_members_mean\":%.4f,"
      "\"lookup_members_p99\":%.1f,\"lookup_max_share_mean\":%.4f,"
      "\"fetch_members_mean\":%.4f,\"hit_chunks\":%d,\"prompt_chunks\":%d,"
      "\"hits_kept_after_loss\":%.4f,\"top_percent_share\":%.4f}",
      WorkloadName(c.kind), c.arrivals == Arrivals::kBursty ? "bursty" : "poisson", r.members,
      r.unit, r.requests, r.lookups, r.chunk_requests, r.chunks_stored,
      r.chunks_stored * chunk_bytes, r.requests_max_over_mean, r.hottest_share,
      r.bytes_max_over_mean, r.busiest_window_max_over_mean, r.lookup_members_mean,
      r.lookup_members_p99, r.lookup_max_share_mean, r.fetch_members_mean, r.hit_chunks,
      r.prompt_chunks, r.hits_kept_after_loss, r.top_percent_share);
}

constexpr char kLegend[] =
    "req: max/mean of chunk requests (gets + puts) per member; hot%: the hottest member's "
    "share;\nbytes: max/mean of bytes stored; busiest: req in the busiest window; members, "
    "p99: members\none lookup asks (mean, p99); share: largest share of a lookup's keys on "
    "one member;\nfetch: members one request's hits come from; kept: hit chunks still usable "
    "with one member lost;\ntop1%: share of chunk requests for the hottest 1% of chunks\n\n";

int Main(int argc, char** argv) {
  bool help = false;
  absl::StatusOr<StudyFlags> f = Parse(argc, argv, &help);
  if (!f.ok() || help) {
    if (!f.ok()) std::cerr << "kvstash_placement_study: " << f.status().message() << "\n";
    std::cerr << "flags: --workloads --bursty --burst_cv --members --segments --hot_replicas "
                 "--chunk_tokens "
                 "--kv_bytes_per_token --window_s --seed --json (bench/cluster.md)\n";
    return f.ok() ? 0 : 2;
  }
  std::ofstream json;
  if (!f->json_path.empty()) json.open(f->json_path, std::ios::app);
  const KeyChain chain(Key128{}, HashAlgo::kXxh3_128, f->trace.chunk_tokens);
  std::cout << kLegend;
  PrintHeader();
  for (const Case& c : f->cases) {
    TraceOptions t = f->trace;
    t.arrivals = c.arrivals;
    absl::StatusOr<Trace> trace = GenerateTrace(c.kind, t);
    if (!trace.ok()) {
      std::cerr << "kvstash_placement_study: " << trace.status() << "\n";
      return 1;
    }
    for (const PlacementResult& r :
         RunPlacementStudy(*trace, chain, f->members, f->units, f->study)) {
      PrintRow(c.Name(), r);
      if (json.is_open()) json << JsonLine(c, r, f->study.chunk_bytes) << "\n";
    }
  }
  if (json.is_open() && !json.good()) {
    std::cerr << "kvstash_placement_study: cannot write " << f->json_path << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace kvstash::bench::workload

int main(int argc, char** argv) { return kvstash::bench::workload::Main(argc, argv); }
