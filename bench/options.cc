#include "bench/options.h"

#include <map>
#include <set>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/byte_size.h"
#include "common/flags.h"

ABSL_FLAG(bool, quick, false, "short run; explicit flags still win");
ABSL_FLAG(bool, keep_scratch, false, "keep the scratch directory with server logs");
ABSL_FLAG(bool, no_fill, false, "do not fill kvstash's DRAM tier first");
ABSL_FLAG(bool, nvme, false, "the NVMe suite instead of the sweep");
ABSL_FLAG(bool, scrape, false, "the scrape suite instead of the sweep");
ABSL_FLAG(bool, ucx, false, "the UCX suite instead of the sweep");
ABSL_FLAG(bool, security, false, "the security suite instead of the sweep");
ABSL_FLAG(bool, cluster, false, "the cluster suite instead of the sweep");
// Valued flags are read as written, in command-line order, by Apply below; their absl
// values only check that they were given a value.
ABSL_FLAG(std::string, sizes, "", "chunk sizes");
ABSL_FLAG(std::string, clients, "", "concurrent clients per cell");
ABSL_FLAG(std::string, rounds, "", "rounds");
ABSL_FLAG(std::string, seconds, "", "measured seconds per cell");
ABSL_FLAG(std::string, budget, "", "kvstashd storage.dram.capacity_bytes");
ABSL_FLAG(std::string, json, "", "one JSON object per line per measurement");
ABSL_FLAG(std::string, systems, "", "any of kvstash,redis,memcached");
ABSL_FLAG(std::string, kvstashd, "", "daemon binary");
ABSL_FLAG(std::string, redis_server, "", "redis-server binary");
ABSL_FLAG(std::string, memcached, "", "memcached binary");
ABSL_FLAG(std::string, working_set, "", "bytes per system per size read by get cells");
ABSL_FLAG(std::string, lookup_keys, "", "chunks per lookup prompt");
ABSL_FLAG(std::string, kvstash_set, "", "extra daemon config override K=V (repeatable)");
ABSL_FLAG(std::string, frame_bytes, "", "client frame size");
ABSL_FLAG(std::string, scrape_ms, "", "the scraper's interval");
ABSL_FLAG(std::string, transport, "", "with --ucx: ucx-tcp and/or ucx-shm");

namespace kvstash::bench {
namespace {

// Defaults of a full run and of --quick, applied before the explicit flags.
std::map<std::string, std::string> Defaults(bool quick) {
  if (quick) {
    return {{"sizes", "256KiB,4MiB,32MiB"},
            {"clients", "1,4"},
            {"rounds", "1"},
            {"seconds", "0.5"},
            {"budget", "1GiB"},
            {"working_set", "256MiB"}};
  }
  return {{"sizes", "256KiB,1MiB,4MiB,16MiB,32MiB"},
          {"clients", "1,4,16"},
          {"rounds", "3"},
          {"seconds", "1.5"},
          {"budget", "4GiB"},
          {"working_set", "512MiB"}};
}

template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> ParseList(const std::string& flag, absl::string_view text,
                                         Parse parse) {
  std::vector<T> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    absl::StatusOr<T> v = parse(absl::StripAsciiWhitespace(item));
    if (!v.ok())
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", v.status().message()));
    out.push_back(*v);
  }
  if (out.empty()) return absl::InvalidArgumentError("--" + flag + ": empty list");
  return out;
}

absl::StatusOr<int> ParsePositiveInt(absl::string_view text) {
  int v = 0;
  if (!absl::SimpleAtoi(text, &v) || v <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a positive integer, got '", text, "'"));
  }
  return v;
}

absl::StatusOr<size_t> ParseChunkSize(absl::string_view text) {
  absl::StatusOr<uint64_t> v = ParseByteSize(text);
  if (!v.ok()) return v.status();
  if (*v == 0) return absl::InvalidArgumentError("chunk size must be > 0");
  return static_cast<size_t>(*v);
}

// Flags whose value is a list, a count or a number.
absl::Status ApplyNumeric(const std::string& flag, const std::string& value, RunConfig& r) {
  if (flag == "sizes") {
    auto v = ParseList<size_t>(flag, value, ParseChunkSize);
    if (!v.ok()) return v.status();
    r.sizes = *v;
  } else if (flag == "clients") {
    auto v = ParseList<int>(flag, value, ParsePositiveInt);
    if (!v.ok()) return v.status();
    r.clients = *v;
  } else if (flag == "rounds" || flag == "lookup_keys") {
    int v = 0;
    if (!absl::SimpleAtoi(value, &v) || v < (flag == "rounds" ? 1 : 0)) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": bad count '", value, "'"));
    }
    (flag == "rounds" ? r.rounds : r.lookup_keys) = v;
  } else if (flag == "seconds") {
    if (!absl::SimpleAtod(value, &r.limits.seconds) || r.limits.seconds <= 0) {
      return absl::InvalidArgumentError("--seconds: expected a positive number, got " + value);
    }
  } else {  // byte sizes
    absl::StatusOr<uint64_t> v = ParseByteSize(value);
    if (!v.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", v.status().message()));
    }
    if (flag == "budget") r.budget_bytes = *v;
    if (flag == "working_set") r.working_set_bytes = *v;
    if (flag == "frame_bytes") r.kvstash_frame_bytes = static_cast<uint32_t>(*v);
  }
  return absl::OkStatus();
}

absl::Status Apply(const std::string& flag, const std::string& value, BenchOptions& o) {
  static const auto* numeric =
      new std::set<std::string>{"sizes",   "clients", "rounds",      "lookup_keys",
                                "seconds", "budget",  "working_set", "frame_bytes"};
  RunConfig& r = o.run;
  if (numeric->count(flag) > 0) return ApplyNumeric(flag, value, r);
  if (flag == "systems") r.systems = absl::StrSplit(value, ',', absl::SkipWhitespace());
  if (flag == "json") o.json_path = value;
  if (flag == "kvstashd") r.kvstashd_path = value;
  if (flag == "redis_server") r.redis_path = value;
  if (flag == "memcached") r.memcached_path = value;
  if (flag == "kvstash_set") r.kvstash_sets.push_back(value);
  if (flag == "transport") {
    o.transports = absl::StrSplit(value, ',', absl::SkipWhitespace());
    for (const std::string& t : o.transports) {
      if (t != "ucx-tcp" && t != "ucx-shm" && t != "local") {
        return absl::InvalidArgumentError(
            "--transport: expected ucx-tcp, ucx-shm and/or local, got " + t);
      }
    }
  }
  if (flag == "scrape_ms" && (!absl::SimpleAtoi(value, &o.scrape_ms) || o.scrape_ms <= 0)) {
    return absl::InvalidArgumentError("--scrape_ms: expected a positive integer, got " + value);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BenchOptions> ParseOptions(int argc, char** argv,
                                          const std::string& default_kvstashd) {
  FlagParseOptions parse;
  parse.defined_in = "bench/options.cc";
  absl::StatusOr<ParsedFlags> flags = ParseFlags(argc, argv, parse);
  if (!flags.ok()) return flags.status();
  BenchOptions o;
  o.help = flags->help;
  if (o.help) return o;
  o.run.kvstashd_path = default_kvstashd;
  o.run.keep_scratch = absl::GetFlag(FLAGS_keep_scratch);
  o.run.fill_tier = !absl::GetFlag(FLAGS_no_fill);
  o.nvme = absl::GetFlag(FLAGS_nvme);
  o.scrape = absl::GetFlag(FLAGS_scrape);
  o.ucx = absl::GetFlag(FLAGS_ucx);
  o.security = absl::GetFlag(FLAGS_security);
  o.cluster = absl::GetFlag(FLAGS_cluster);
  for (const auto& [flag, value] : Defaults(absl::GetFlag(FLAGS_quick))) {
    absl::Status s = Apply(flag, value, o);
    if (!s.ok()) return s;
  }
  if (o.ucx) {  // the UCX targets' sizes and client counts
    if (!flags->Given("sizes")) (void)Apply("sizes", "64KiB,4MiB,32MiB", o);
    if (!flags->Given("clients")) (void)Apply("clients", "1,4", o);
  }
  if (o.security) {  // the 4 MiB x4 cells of the security targets, more rounds
    if (!flags->Given("sizes")) (void)Apply("sizes", "4MiB", o);
    if (!flags->Given("clients")) (void)Apply("clients", "4", o);
    if (!flags->Given("rounds")) (void)Apply("rounds", "5", o);
  }
  if (o.cluster) {  // short cells: 6 daemons, etcd and the client share the host's cores
    for (const auto& [flag, value] : std::map<std::string, std::string>{{"sizes", "1MiB"},
                                                                        {"clients", "4"},
                                                                        {"seconds", "1"},
                                                                        {"budget", "1GiB"},
                                                                        {"working_set", "64MiB"}}) {
      if (!flags->Given(flag)) (void)Apply(flag, value, o);
    }
  }
  for (const auto& [flag, value] : flags->uses) {
    absl::Status s = Apply(flag, value, o);
    if (!s.ok()) return s;
  }
  if (o.run.budget_bytes < (64ull << 20)) {
    return absl::InvalidArgumentError("--budget: at least 64MiB");
  }
  return o;
}

std::string UsageText() {
  return R"(kvstash_bench: kvstashd vs Redis vs memcached on loopback.

  --sizes LIST        chunk sizes (default 256KiB,1MiB,4MiB,16MiB,32MiB; quick 256KiB,4MiB,32MiB)
  --clients LIST      concurrent clients per cell (default 1,4,16; quick 1,4)
  --rounds N          rounds; tables show the median of rounds (default 3; quick 1)
  --seconds S         measured seconds per cell (default 1.5; quick 0.5)
  --budget SIZE       kvstashd storage.dram.capacity_bytes (default 4GiB; quick 1GiB)
  --working_set SIZE  bytes per system per size read by get cells, <= budget/4 (default 512MiB)
  --systems LIST      any of kvstash,redis,memcached (default all three)
  --json FILE         one JSON object per line per measurement
  --quick             short run (~1-2 min); explicit flags still win
  --lookup_keys N     chunks per lookup prompt (default 1000; 0 skips lookups)
  --no_fill           do not fill kvstash's DRAM tier first (puts then hit a cold arena);
                      skips the RSS check
  --kvstashd PATH     daemon binary (default: the one built with this program)
  --redis_server PATH, --memcached PATH   peer binaries (default: from PATH)
  --kvstash_set K=V   extra daemon config override (repeatable), e.g. server.send_frame_bytes=4MiB
  --frame_bytes SIZE  client frame size (default: the client's default)
  --keep_scratch      keep the scratch directory with server logs
  --nvme              instead of the sweep: the NVMe tier next to fio (NVMe-hit gets, puts
                      with demotion, DRAM hits under demotion, index rebuild of 10k/100k
                      chunks); uses --rounds, --seconds, --kvstash_set, --json
  --scrape            instead of the sweep: every get/put cell on one kvstashd, alone and
                      while /metrics is scraped every --scrape_ms (default 1000), in the same
                      run; uses --sizes, --clients, --rounds, --seconds, --budget, --json
  --ucx               instead of the sweep: kvstash over UCX next to ucx_perftest -t tag_bw
                      (same UCX_TLS and size: the limit) and memcached, interleaved, with
                      ratios and target checks; sizes default 64KiB,4MiB,32MiB, clients 1,4
  --transport LIST    with --ucx: ucx-tcp (UCX_TLS=tcp), ucx-shm (sm,self) and/or local
                      (unix:// to server.local_socket: gets from the mapped arena, puts over
                      gRPC); default ucx-tcp,ucx-shm
  --security          instead of the sweep: get/put cells with transport security on and
                      off, interleaved, one daemon per configuration: gRPC plaintext vs
                      TLS (certificates made by openssl in the scratch directory), UCX over
                      TCP with and without tokens; ratios and the >= 0.9x gRPC target;
                      sizes default 4MiB, clients 4, rounds 5
  --cluster           instead of the sweep: etcd and 1, 2, 3 registered daemons; get/put
                      through one shared client (ratios to one daemon), Lookup of a
                      --lookup_keys prompt over 3 members vs 1, convergence after kill -9
                      (lease_ttl_s 2 and default); sizes default 1MiB, clients 4, budget
                      1GiB per daemon (bench/cluster.md)
)";
}

}  // namespace kvstash::bench
