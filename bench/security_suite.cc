#include "bench/security_suite.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/kvstash_system.h"
#include "bench/process.h"
#include "bench/system_cells.h"
#include "common/bearer_token.h"
#include "testing/procfs.h"

namespace kvstash::bench {
namespace {

// One daemon configuration of the comparison.
struct Variant {
  const char* label;     // the rows' transport
  const char* baseline;  // the plain variant it is compared with; null for plain ones
  bool ucx;              // ucx:// over UCX_TLS=tcp, else grpc://
  bool tls;
  bool token;
  bool local;     // unix:// to server.local_socket
  double target;  // least ratio to the baseline
};

// gRPC with TLS: >= 0.9x. UCX with tokens: the Hello is once per connection, so within
// noise; 0.95x stands for that. The local socket skips TCP: no slower than loopback.
constexpr Variant kVariants[] = {
    {"grpc", nullptr, false, false, false, false, 0},
    {"grpc+tls", "grpc", false, true, false, false, 0.9},
    {"grpc+tls+token", "grpc", false, true, true, false, 0.9},
    {"grpc-local", "grpc", false, false, false, true, 1.0},
    {"ucx-tcp", nullptr, true, false, false, false, 0},
    {"ucx-tcp+token", "ucx-tcp", true, false, true, false, 0.95},
};

// Where tests/tls_certs.sh is: beside the sources this program was built from, or under
// the working directory (a copy of the repository on another host).
std::string CertScript() {
  const std::string built = std::string(KVSTASH_SOURCE_DIR) + "/tests/tls_certs.sh";
  return std::filesystem::exists(built) ? built : "tests/tls_certs.sh";
}

absl::Status MakeCertificates(const std::string& dir) {
  auto child = ChildProcess::Spawn("tls_certs.sh", {"/bin/sh", CertScript(), dir}, dir + ".log");
  if (!child.ok()) return child.status();
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while ((*child)->Alive() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(20));
  (*child)->Stop(100);
  if (!std::filesystem::exists(dir + "/server.key")) {
    return absl::UnavailableError(
        absl::StrCat("openssl made no certificates: ", (*child)->LogTail(3)));
  }
  return absl::OkStatus();
}

// A token file in `dir` admitting one principal with every right, a daemon that requires
// tokens, and clients that present that principal's token.
absl::Status ApplyToken(const std::string& dir, KvstashOptions* o) {
  o->token = NewToken();
  const std::string path = dir + "/tokens";
  std::ofstream(path) << "principals:\n  - name: bench\n    token_sha256: " << HashToken(o->token)
                      << "\n    read: [\"*\"]\n    write: [\"*\"]\n";
  if (!std::filesystem::exists(path)) return absl::InternalError("cannot write " + path);
  o->extra_sets.push_back("auth.token_file=" + path);
  o->extra_sets.push_back("auth.required=true");
  return absl::OkStatus();
}

struct Daemons {
  std::unique_ptr<ScratchDir> scratch;
  std::vector<const Variant*> variants;  // started ones, in kVariants order
  std::map<std::string, std::unique_ptr<KvstashSystem>> by_label;
  std::vector<pid_t> pids;
};

absl::StatusOr<KvstashOptions> OptionsFor(const RunConfig& config, const Variant& v,
                                          const std::string& scratch) {
  KvstashOptions o;
  o.binary = config.kvstashd_path;
  o.scratch_dir = scratch + "/" + v.label;
  std::filesystem::create_directories(o.scratch_dir);
  o.dram_budget_bytes = std::min<uint64_t>(config.budget_bytes, 2ull << 30);
  o.extra_sets = {"storage.nvme.enabled=false", "ucx.direct_access=false"};
  o.extra_sets.insert(o.extra_sets.end(), config.kvstash_sets.begin(), config.kvstash_sets.end());
  o.transport_label = v.label;
  if (v.ucx) o.ucx_tls = "tcp";
  o.local_socket = v.local;
  if (v.tls) {
    const std::string certs = scratch + "/certs";
    o.extra_sets.push_back("server.tls.cert_file=" + certs + "/server.crt");
    o.extra_sets.push_back("server.tls.key_file=" + certs + "/server.key");
    o.tls_ca_file = certs + "/ca.crt";
  }
  if (v.token) {
    if (absl::Status s = ApplyToken(o.scratch_dir, &o); !s.ok()) return s;
  }
  return o;
}

absl::StatusOr<Daemons> StartDaemons(const RunConfig& config, std::vector<std::string>* notes) {
  Daemons d;
  auto scratch = ScratchDir::Create("kvstash-bench-security");
  if (!scratch.ok()) return scratch.status();
  d.scratch = *std::move(scratch);
  if (config.keep_scratch) d.scratch->Keep();
  if (absl::Status s = MakeCertificates(d.scratch->path() + "/certs"); !s.ok()) return s;
  for (const Variant& v : kVariants) {
    absl::StatusOr<KvstashOptions> o = OptionsFor(config, v, d.scratch->path());
    if (!o.ok()) {
      notes->push_back(absl::StrCat(v.label, " skipped: ", o.status().ToString()));
      continue;
    }
    auto k = KvstashSystem::Start(*o);
    if (!k.ok()) return k.status();
    d.pids.push_back((*k)->server_pid());
    d.variants.push_back(&v);
    d.by_label[v.label] = *std::move(k);
  }
  return d;
}

// CPU seconds the daemons and the client threads spent per GB moved, per configuration:
// on a host without idle cores the throughput ratio is a CPU ratio, and this says where.
class CpuCost {
 public:
  // Runs `cells` for `label` (its daemon `pid`), charging the CPU time and bytes to it.
  void Measure(const std::string& label, pid_t pid, const std::function<size_t()>& cells,
               const std::vector<Sample>& samples) {
    const absl::StatusOr<absl::Duration> d0 = ReadProcCpuTime(pid);
    const absl::StatusOr<absl::Duration> c0 = ReadProcCpuTime(getpid());
    const size_t first = cells();
    const absl::StatusOr<absl::Duration> d1 = ReadProcCpuTime(pid);
    const absl::StatusOr<absl::Duration> c1 = ReadProcCpuTime(getpid());
    if (!d0.ok() || !d1.ok() || !c0.ok() || !c1.ok()) return;
    Totals& t = totals_[label];
    t.daemon_s += absl::ToDoubleSeconds(*d1 - *d0);
    t.client_s += absl::ToDoubleSeconds(*c1 - *c0);
    for (size_t i = first; i < samples.size(); ++i) t.bytes += samples[i].result.bytes;
  }

  void AddNotes(std::vector<std::string>* notes) const {
    for (const auto& [label, t] : totals_) {
      if (t.bytes == 0) continue;
      const double gb = static_cast<double>(t.bytes) / 1e9;
      notes->push_back(absl::StrFormat(
          "%s: %.2f CPU-s per GB in the daemon, %.2f in the clients (get and put cells)", label,
          t.daemon_s / gb, t.client_s / gb));
    }
  }

 private:
  struct Totals {
    double daemon_s = 0, client_s = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, Totals> totals_;
};

}  // namespace

absl::StatusOr<SecuritySuiteOutput> RunSecuritySuite(const RunConfig& config,
                                                     std::ostream& progress) {
  SecuritySuiteOutput out;
  absl::StatusOr<Daemons> d = StartDaemons(config, &out.notes);
  if (!d.ok()) return d.status();
  uint64_t put_space = 5000;
  ConnPool pool;
  CpuCost cost;
  const size_t n = d->variants.size();
  for (int round = 0; round < config.rounds; ++round) {
    for (size_t size : config.sizes) {
      const std::vector<char> value(size, static_cast<char>('a' + round));
      std::vector<BenchKey> ws;
      const uint64_t keys = std::clamp<uint64_t>(config.working_set_bytes / 4 / size, 4, 256);
      for (uint64_t i = 0; i < keys; ++i) ws.push_back(MakeKey(size, i));
      for (int clients : config.clients) {
        progress << "round " << round + 1 << " size " << FormatBytes(size) << " clients " << clients
                 << "\n";
        CellSpec cell{size, clients, &ws, absl::MakeConstSpan(value), 0, &d->pids};
        for (size_t i = 0; i < n; ++i) {
          const Variant& v = *d->variants[(i + round) % n];
          cell.put_space = put_space++;
          KvstashSystem& system = *d->by_label[v.label];
          cost.Measure(
              v.label, system.server_pid(),
              [&] {
                const size_t first = out.samples.size();
                RunSystemCells(system, cell, config.limits, &pool, &out.samples, &out.notes);
                return first;
              },
              out.samples);
        }
      }
    }
  }
  cost.AddNotes(&out.notes);
  return out;
}

namespace {

const Row* FindRow(const std::vector<Row>& rows, const std::string& transport, const Row& like) {
  for (const Row& r : rows) {
    if (r.system == "kvstash" && r.transport == transport && r.op == like.op &&
        r.chunk_bytes == like.chunk_bytes && r.clients == like.clients && r.rounds > 0) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace

void PrintSecurityReport(std::ostream& out, const std::vector<Row>& rows) {
  PrintResultTable(out, rows);
  out << "\n== secured (or local) / plain (GB/s, medians) ==\n";
  out << absl::StrFormat("%-5s %-8s %7s %-15s %10s %10s %8s  %s\n", "op", "size", "clients",
                         "transport", "secured", "plain", "ratio", "target");
  for (const Row& r : rows) {
    const Variant* v = nullptr;
    for (const Variant& candidate : kVariants) {
      if (r.transport == candidate.label && candidate.baseline != nullptr) v = &candidate;
    }
    if (v == nullptr || r.rounds == 0) continue;
    const Row* base = FindRow(rows, v->baseline, r);
    if (base == nullptr || base->gbps <= 0) continue;
    const double ratio = r.gbps / base->gbps;
    const double target = v->target;
    out << absl::StrFormat("%-5s %-8s %7d %-15s %10.3f %10.3f %7.2fx  >= %.2fx %s\n", OpName(r.op),
                           FormatBytes(r.chunk_bytes), r.clients, r.transport, r.gbps, base->gbps,
                           ratio, target, ratio >= target ? "MET" : "MISSED");
  }
}

}  // namespace kvstash::bench
