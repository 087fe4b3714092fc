#include "bench/workload/options.h"

#include <cmath>
#include <map>
#include <set>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/byte_size.h"
#include "common/flags.h"

ABSL_FLAG(bool, short, false, "smoke-test form: tiny model, few requests");
ABSL_FLAG(bool, keep_scratch, false, "keep server logs and data");
// Valued flags are read as written, in command-line order; their absl values only check
// that they were given one.
ABSL_FLAG(std::string, workloads, "", "workloads");
ABSL_FLAG(std::string, store, "", "stores");
ABSL_FLAG(std::string, model, "", "model shape");
ABSL_FLAG(std::string, chunk_tokens, "", "tokens per chunk");
ABSL_FLAG(std::string, byte_scale, "", "wire fraction of the model's bytes");
ABSL_FLAG(std::string, max_wire_working_set, "", "bound for the automatic byte scale");
ABSL_FLAG(std::string, engine_cache_fraction, "", "engine cache / working set");
ABSL_FLAG(std::string, capacity_fraction, "", "kvstash capacities / working set");
ABSL_FLAG(std::string, nvme_fraction, "", "NVMe capacity / working set");
ABSL_FLAG(std::string, policies, "", "storage.dram.eviction values");
ABSL_FLAG(std::string, hints, "", "hint sets");
ABSL_FLAG(std::string, advisor, "", "FetchAdvisor on kvstash stores: on, off or both");
ABSL_FLAG(std::string, kvstash_set, "", "daemon override K=V (repeatable)");
ABSL_FLAG(std::string, seed, "", "trace seed");
ABSL_FLAG(std::string, scale, "", "session count multiplier");
ABSL_FLAG(std::string, users, "", "chat users");
ABSL_FLAG(std::string, arrivals, "", "poisson or bursty");
ABSL_FLAG(std::string, burst_cv, "", "bursty inter-arrival CV");
ABSL_FLAG(std::string, speedup, "", "virtual seconds per wall second");
ABSL_FLAG(std::string, gpu_tflops, "", "GPU dense bf16 TFLOP/s");
ABSL_FLAG(std::string, mfu, "", "prefill FLOPs utilisation");
ABSL_FLAG(std::string, prefill_tokens_per_s, "", "prefill rate");
ABSL_FLAG(std::string, attention_s_per_token_ctx, "", "attention cost");
ABSL_FLAG(std::string, decode_tokens_per_s, "", "decode rate");
ABSL_FLAG(std::string, calibration, "", "JSON cost file");
ABSL_FLAG(std::string, json, "", "JSON lines output");
ABSL_FLAG(std::string, csv, "", "CSV output");
ABSL_FLAG(std::string, plots, "", "PNG directory");
ABSL_FLAG(std::string, kvstashd, "", "daemon binary");
ABSL_FLAG(std::string, redis_server, "", "redis-server binary");
ABSL_FLAG(std::string, memcached, "", "memcached binary");
ABSL_FLAG(std::string, ucx_tls, "", "UCX transports of kvstash-ucx");

namespace kvstash::bench::workload {
namespace {

absl::Status Bad(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

absl::StatusOr<double> Number(absl::string_view flag, absl::string_view text, double lo,
                              double hi) {
  double v = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &v) || !(v >= lo && v <= hi)) {
    return Bad(flag, absl::StrCat("expected a number in [", lo, ", ", hi, "], got '", text, "'"));
  }
  return v;
}

std::vector<std::string> List(absl::string_view text) {
  std::vector<std::string> out;
  for (absl::string_view s : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(s));
  }
  return out;
}

absl::StatusOr<StoreSpec> ParseStore(const std::string& name) {
  StoreSpec s;
  s.name = name;
  if (name == "none") return s;
  if (name == "redis" || name == "memcached") {
    s.kind = name == "redis" ? StoreSpec::Kind::kRedis : StoreSpec::Kind::kMemcached;
    return s;
  }
  std::vector<std::string> parts = absl::StrSplit(name, '-');
  if (parts[0] != "kvstash") {
    return Bad("store", absl::StrCat("unknown store '", name,
                                     "'; known: none, kvstash[-nvme][-ucx], redis, memcached"));
  }
  s.kind = StoreSpec::Kind::kKvstash;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i] == "nvme") {
      s.nvme = true;
    } else if (parts[i] == "ucx") {
      s.ucx = true;
    } else {
      return Bad("store", absl::StrCat("unknown kvstash variant '", parts[i], "' in ", name));
    }
  }
  return s;
}

absl::StatusOr<HintOptions> ParseHints(const std::string& text) {
  HintOptions h;
  if (text == "none") return h;
  if (text == "all") return HintOptions{true, true, true};
  for (absl::string_view part : absl::StrSplit(text, '+')) {
    if (part == "session") {
      h.session = true;
    } else if (part == "parent") {
      h.parent = true;
    } else if (part == "ttl") {
      h.ttl = true;
    } else {
      return Bad("hints", absl::StrCat("unknown hint '", part,
                                       "'; use none, all, or session, parent, ttl joined by +"));
    }
  }
  return h;
}

absl::StatusOr<bool> ParseAdvisor(const std::string& text) {
  if (text == "on" || text == "off") return text == "on";
  return Bad("advisor", absl::StrCat("expected on or off, got '", text, "'"));
}

absl::StatusOr<double> ParseByteScale(absl::string_view text) {
  if (text == "auto") return 0.0;
  std::pair<absl::string_view, absl::string_view> frac = absl::StrSplit(text, '/');
  double num = 0, den = 1;
  if (!absl::SimpleAtod(frac.first, &num) ||
      (!frac.second.empty() && !absl::SimpleAtod(frac.second, &den)) || !(den > 0) ||
      !(num / den > 0 && num / den <= 1)) {
    return Bad(
        "byte_scale",
        absl::StrCat("expected auto or a fraction in (0, 1] such as 1/16, got '", text, "'"));
  }
  return num / den;
}

// Parses each item of the list `text` into *out (replacing it).
template <typename T, typename Parse>
absl::Status ParseEach(absl::string_view text, Parse parse, std::vector<T>* out) {
  out->clear();
  for (const std::string& item : List(text)) {
    absl::StatusOr<T> v = parse(item);
    if (!v.ok()) return v.status();
    out->push_back(*v);
  }
  return absl::OkStatus();
}

// List flags.
absl::Status ApplyList(const std::string& flag, const std::string& v, WorkloadOptions& o) {
  if (flag == "workloads") {
    return ParseEach<WorkloadKind>(
        v,
        [&](const std::string& w) -> absl::StatusOr<WorkloadKind> {
          absl::StatusOr<WorkloadKind> k = ParseWorkload(w);
          if (!k.ok()) return Bad(flag, k.status().message());
          return k;
        },
        &o.workloads);
  }
  if (flag == "store") return ParseEach<StoreSpec>(v, ParseStore, &o.stores);
  if (flag == "hints") return ParseEach<HintOptions>(v, ParseHints, &o.hint_sets);
  if (flag == "advisor") return ParseEach<bool>(v, ParseAdvisor, &o.advisor);
  o.policies = List(v);  // "policies"
  return absl::OkStatus();
}

// Names, sizes and paths.
absl::Status ApplyText(const std::string& flag, const std::string& v, WorkloadOptions& o) {
  if (flag == "workloads" || flag == "store" || flag == "hints" || flag == "policies" ||
      flag == "advisor") {
    return ApplyList(flag, v, o);
  }
  if (flag == "model") {
    absl::StatusOr<ModelShape> m = ModelByName(v);
    if (!m.ok()) return Bad(flag, m.status().message());
    o.model = *m;
  } else if (flag == "arrivals") {
    if (v != "poisson" && v != "bursty") return Bad(flag, "expected poisson or bursty, got " + v);
    o.trace.arrivals = v == "poisson" ? Arrivals::kPoisson : Arrivals::kBursty;
  } else if (flag == "kvstash_set") {
    if (v.find('=') == std::string::npos) return Bad(flag, "expected key=value, got " + v);
    o.kvstash_sets.push_back(v);
  } else if (flag == "byte_scale") {
    absl::StatusOr<double> s = ParseByteScale(v);
    if (!s.ok()) return s.status();
    o.byte_scale = *s;
  } else if (flag == "max_wire_working_set") {
    absl::StatusOr<uint64_t> b = ParseByteSize(v);
    if (!b.ok() || *b == 0) return Bad(flag, "expected a byte size such as 2GiB, got " + v);
    o.max_wire_working_set_bytes = *b;
  } else {
    std::string* path = flag == "json"           ? &o.json_path
                        : flag == "csv"          ? &o.csv_path
                        : flag == "plots"        ? &o.plots_dir
                        : flag == "kvstashd"     ? &o.kvstashd_path
                        : flag == "redis_server" ? &o.redis_path
                        : flag == "memcached"    ? &o.memcached_path
                        : flag == "ucx_tls"      ? &o.ucx_tls
                                                 : nullptr;
    if (path == nullptr) return absl::InternalError("unhandled flag --" + flag);
    *path = v;
  }
  return absl::OkStatus();
}

// Numbers; the cost flags are applied after the model's defaults (ApplyCost).
absl::Status ApplyNumber(const std::string& flag, const std::string& v, WorkloadOptions& o) {
  if (flag == "capacity_fraction") {
    o.capacity_fractions.clear();
    for (const std::string& f : List(v)) {
      absl::StatusOr<double> x = Number(flag, f, 1e-6, 1);
      if (!x.ok()) return x.status();
      o.capacity_fractions.push_back(*x);
    }
    return o.capacity_fractions.empty() ? Bad(flag, "empty list") : absl::OkStatus();
  }
  struct Target {
    double* value;
    double lo, hi;
  };
  double chunk = o.chunk_tokens, seed = o.trace.seed, users = o.trace.chat_users;
  const std::map<std::string, Target> targets = {
      {"chunk_tokens", {&chunk, 1, 1 << 20}},
      {"seed", {&seed, 0, 1e15}},
      {"users", {&users, 1, 100000}},
      {"scale", {&o.trace.scale, 1e-6, 1000}},
      {"burst_cv", {&o.trace.burst_cv, 1e-3, 100}},
      {"engine_cache_fraction", {&o.engine_cache_fraction, 0, 100}},
      {"nvme_fraction", {&o.nvme_fraction, 1e-6, 100}},
      {"speedup", {&o.speedup, 0, 1e6}},
      {"gpu_tflops", {&o.gpu.tflops, 1e-3, 1e6}},
      {"mfu", {&o.gpu.mfu, 1e-3, 1}},
      {"decode_tokens_per_s", {&o.gpu.decode_tokens_per_s, 1e-3, 1e9}},
  };
  auto it = targets.find(flag);
  if (it == targets.end()) return absl::InternalError("unhandled flag --" + flag);
  absl::StatusOr<double> x = Number(flag, v, it->second.lo, it->second.hi);
  if (!x.ok()) return x.status();
  *it->second.value = *x;
  o.chunk_tokens = static_cast<uint32_t>(chunk);
  o.trace.seed = static_cast<uint64_t>(seed);
  o.trace.chat_users = static_cast<int>(users);
  return absl::OkStatus();
}

const std::set<std::string>& TextFlags() {
  static const auto* flags =
      new std::set<std::string>{"workloads",   "store",        "model",
                                "policies",    "hints",        "arrivals",
                                "kvstash_set", "byte_scale",   "max_wire_working_set",
                                "json",        "csv",          "plots",
                                "kvstashd",    "redis_server", "memcached",
                                "ucx_tls",     "advisor"};
  return *flags;
}

absl::Status Apply(const std::string& flag, const std::string& v, WorkloadOptions& o) {
  if (TextFlags().count(flag) > 0) return ApplyText(flag, v, o);
  return ApplyNumber(flag, v, o);
}

// The cost model: the model's defaults on the GPU, then explicit rates, then the file.
absl::Status ApplyCost(const ParsedFlags& flags, WorkloadOptions& o) {
  o.cost = DefaultCost(o.model, o.gpu);
  for (const auto& [flag, v] : flags.uses) {
    if (flag == "prefill_tokens_per_s" || flag == "attention_s_per_token_ctx") {
      absl::StatusOr<double> x = Number(flag, v, 0, 1e12);
      if (!x.ok()) return x.status();
      (flag == "prefill_tokens_per_s" ? o.cost.prefill.tokens_per_s
                                      : o.cost.prefill.attention_s_per_token2) = *x;
    }
  }
  for (const std::string& path : flags.Values("calibration")) {
    if (absl::Status s = ApplyCalibrationFile(path, &o.cost); !s.ok()) return s;
  }
  return o.cost.Validate();
}

std::map<std::string, std::string> Defaults(bool short_form) {
  if (short_form) {
    return {{"workloads", "chat,analytics,code,rag,agents,docqa"},
            {"store", "none,kvstash,redis,memcached"},
            {"model", "tiny"},
            {"scale", "0.1"},
            {"speedup", "100"}};
  }
  return {{"workloads", "chat,analytics,code,rag,agents,docqa"},
          {"store", "none,kvstash,kvstash-nvme,redis,memcached"},
          {"model", "llama3-8b"}};
}

}  // namespace

absl::StatusOr<WorkloadOptions> ParseWorkloadOptions(int argc, char** argv,
                                                     const std::string& default_kvstashd) {
  FlagParseOptions parse;
  parse.defined_in = "bench/workload/options.cc";
  absl::StatusOr<ParsedFlags> flags = ParseFlags(argc, argv, parse);
  if (!flags.ok()) return flags.status();
  WorkloadOptions o;
  o.help = flags->help;
  if (o.help) return o;
  o.kvstashd_path = default_kvstashd;
  o.short_form = absl::GetFlag(FLAGS_short);
  o.trace.short_form = o.short_form;
  o.keep_scratch = absl::GetFlag(FLAGS_keep_scratch);
  for (const auto& [flag, v] : Defaults(o.short_form)) {
    if (absl::Status s = Apply(flag, v, o); !s.ok()) return s;
  }
  o.chunk_tokens = o.model.chunk_tokens;
  static const std::set<std::string> kCostFlags = {"prefill_tokens_per_s",
                                                   "attention_s_per_token_ctx", "calibration"};
  for (const auto& [flag, v] : flags->uses) {
    if (flag == "model") {
      if (absl::Status s = Apply(flag, v, o); !s.ok()) return s;
      o.chunk_tokens = o.model.chunk_tokens;
    }
  }
  for (const auto& [flag, v] : flags->uses) {
    if (flag == "model" || flag == "short" || flag == "keep_scratch" ||
        kCostFlags.count(flag) > 0) {
      continue;  // read above
    }
    if (absl::Status s = Apply(flag, v, o); !s.ok()) return s;
  }
  o.trace.chunk_tokens = o.chunk_tokens;
  if (absl::Status s = ApplyCost(*flags, o); !s.ok()) return s;
  if (o.workloads.empty()) return Bad("workloads", "empty list");
  if (o.stores.empty()) return Bad("store", "empty list");
  if (o.policies.empty()) o.policies = {""};
  if (o.hint_sets.empty()) o.hint_sets = {HintOptions{}};
  if (o.advisor.empty()) return Bad("advisor", "empty list");
  return o;
}

std::string WorkloadUsage() {
  return R"(kvstash_workload: an engine model in front of kvstash, Redis or memcached, on
deterministic workload traces; every store runs the same trace (bench/README.md).

  --workloads LIST       chat, analytics, code, rag, agents, docqa (default all)
  --store LIST           none, kvstash, kvstash-nvme, kvstash-ucx, kvstash-nvme-ucx, redis,
                         memcached (default none,kvstash,kvstash-nvme,redis,memcached)
  --model NAME           llama3-8b (128 KiB/token), llama2-7b (512 KiB/token), tiny (4 KiB/token)
  --chunk_tokens N       tokens per chunk (default: the model's, 256; tiny 16)
  --byte_scale F         fraction of the model's bytes sent, e.g. 1/16; measured transfer
                         times are divided by it (default auto: 1, halved until a workload's
                         working set on the wire fits --max_wire_working_set, default 2GiB)
  --engine_cache_fraction F  engine prefix cache / working set (default 0.1; at least two
                         of the largest request)
  --capacity_fraction LIST   store capacities / working set (default 0.25)
  --nvme_fraction F      kvstash-nvme's NVMe capacity / working set (default 1)
  --policies LIST        storage.dram.eviction values to compare (default: the daemon's)
  --hints LIST           hint sets: none, all, or session, parent, ttl joined by + (default none)
  --advisor LIST         kvstash stores fetch only what FetchAdvisor says beats recomputing
                         (on, the default) or every hit (off); off,on runs both
  --kvstash_set K=V      daemon config override (repeatable)
  --seed N, --scale F, --users N (chat, default 64), --arrivals poisson|bursty, --burst_cv F
  --speedup F            virtual seconds per wall second (default 10; 0: unpaced)
  --gpu_tflops F, --mfu F, --prefill_tokens_per_s F, --attention_s_per_token_ctx F,
  --decode_tokens_per_s F, --calibration FILE     the cost model (README: defaults)
  --json FILE, --csv FILE, --plots DIR              outputs besides the table
  --short                smoke form: tiny model, few requests, seconds
  --kvstashd PATH, --redis_server PATH, --memcached PATH, --ucx_tls LIST, --keep_scratch
)";
}

}  // namespace kvstash::bench::workload
