#include "bench/cluster_suite.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/kvstash_system.h"
#include "bench/process.h"
#include "bench/system_cells.h"
#include "cluster/member.h"
#include "testing/procfs.h"

namespace kvstash::bench {
namespace {

constexpr int kDefaultLeaseTtlS = 10;  // cluster.lease_ttl_s's default
constexpr double kPollS = 0.05;        // etcd polls while waiting for a member set

// Clients through one shared client (the cells' threads share it, as an engine's do).
class SharedSystem : public System {
 public:
  SharedSystem(std::string label, std::function<std::unique_ptr<Conn>()> new_conn,
               std::vector<KvstashSystem*> daemons)
      : label_(std::move(label)), new_conn_(std::move(new_conn)), daemons_(std::move(daemons)) {}

  const char* name() const override { return "kvstash"; }
  const char* transport() const override { return label_.c_str(); }
  absl::Status PrepareForSize(size_t) override { return absl::OkStatus(); }
  absl::StatusOr<std::unique_ptr<Conn>> NewConn() override { return new_conn_(); }
  bool NeedsFreshPutKeys() const override { return true; }
  pid_t server_pid() const override { return daemons_[0]->server_pid(); }
  std::string ServerExit() override {
    for (KvstashSystem* d : daemons_) {
      if (std::string e = d->ServerExit(); !e.empty()) return e;
    }
    return "";
  }
  const std::vector<KvstashSystem*>& daemons() const { return daemons_; }

 private:
  std::string label_;
  std::function<std::unique_ptr<Conn>()> new_conn_;
  std::vector<KvstashSystem*> daemons_;
};

// The daemons of one cluster, registered in etcd as `name`.
struct Group {
  std::string name;
  std::vector<std::string> ids;
  std::vector<std::unique_ptr<KvstashSystem>> daemons;
};

struct Env {
  const RunConfig* config;
  std::string scratch;
  std::string etcd;  // endpoint
  std::vector<std::string>* notes;
};

KvstashOptions DaemonOptions(const Env& env, const Group& g, const std::string& id,
                             int lease_ttl_s) {
  KvstashOptions o;
  o.binary = env.config->kvstashd_path;
  o.scratch_dir = env.scratch + "/" + id;
  std::filesystem::create_directories(o.scratch_dir);
  o.dram_budget_bytes = std::min<uint64_t>(env.config->budget_bytes, 1ull << 30);
  o.extra_sets = {"storage.nvme.enabled=false"};
  o.extra_sets.insert(o.extra_sets.end(),
                      {"cluster.enabled=true", "cluster.etcd_endpoints=" + env.etcd,
                       "cluster.name=" + g.name, "cluster.member_id=" + id});
  if (lease_ttl_s > 0) o.extra_sets.push_back(absl::StrCat("cluster.lease_ttl_s=", lease_ttl_s));
  o.extra_sets.insert(o.extra_sets.end(), env.config->kvstash_sets.begin(),
                      env.config->kvstash_sets.end());
  return o;
}

// Member ids registered in etcd for `g`.
absl::StatusOr<std::vector<std::string>> ListedIds(const Env& env, const Group& g) {
  const std::string prefix = cluster::MembersPrefix(cluster::ClusterPrefix(g.name));
  absl::StatusOr<std::vector<std::string>> keys = EtcdKeys(env.etcd, prefix);
  if (!keys.ok()) return keys.status();
  std::vector<std::string> ids;
  for (const std::string& k : *keys) {
    if (absl::StartsWith(k, prefix)) ids.push_back(k.substr(prefix.size()));
  }
  return ids;
}

bool Listed(const Env& env, const Group& g, const std::string& id) {
  absl::StatusOr<std::vector<std::string>> ids = ListedIds(env, g);
  return ids.ok() && std::count(ids->begin(), ids->end(), id) > 0;
}

// Polls etcd until `done` or `timeout_s`; returns the seconds it took, or -1.
double PollUntil(const std::function<bool()>& done, double timeout_s) {
  const absl::Time begin = absl::Now();
  while (!done()) {
    if (absl::Now() - begin > absl::Seconds(timeout_s)) return -1;
    absl::SleepFor(absl::Seconds(kPollS));
  }
  return absl::ToDoubleSeconds(absl::Now() - begin);
}

// Starts `size` daemons named `name`-0.. and waits until etcd lists all of them.
absl::StatusOr<Group> StartGroup(Env& env, const std::string& name, int size, int lease_ttl_s) {
  Group g;
  g.name = name;
  for (int i = 0; i < size; ++i) {
    const std::string id = absl::StrCat(name, "-", i);
    absl::StatusOr<std::unique_ptr<KvstashSystem>> d =
        KvstashSystem::Start(DaemonOptions(env, g, id, lease_ttl_s));
    if (!d.ok()) return d.status();
    g.ids.push_back(id);
    g.daemons.push_back(*std::move(d));
  }
  const bool registered = PollUntil(
                              [&] {
                                absl::StatusOr<std::vector<std::string>> ids = ListedIds(env, g);
                                return ids.ok() && ids->size() == g.ids.size();
                              },
                              20) >= 0;
  if (!registered) {
    return absl::UnavailableError(name + ": members not all listed in etcd after 20 s");
  }
  return g;
}

ClientOptions SharedClientOptions(const RunConfig& config) {
  ClientOptions o = BenchClientOptions(KvstashOptions{});
  o.connections = *std::max_element(config.clients.begin(), config.clients.end());
  return o;
}

// The library's etcd:// client for `g`.
absl::StatusOr<std::unique_ptr<SharedSystem>> ClusterClient(const Env& env, const Group& g) {
  std::vector<KvstashSystem*> daemons;
  for (const auto& d : g.daemons) daemons.push_back(d.get());
  absl::StatusOr<std::unique_ptr<Client>> c =
      Client::Connect("etcd://" + env.etcd + "/" + g.name, SharedClientOptions(*env.config));
  if (!c.ok()) return c.status();
  std::shared_ptr<Client> client = *std::move(c);
  absl::StatusOr<NamespaceHandle> ns = client->OpenNamespace(BenchNamespace());
  if (!ns.ok()) return ns.status();
  return std::make_unique<SharedSystem>(
      absl::StrCat("cluster", g.daemons.size()),
      [client, ns = *ns] { return NewClientConn(client, ns); }, daemons);
}

// The same shared client straight to one daemon, without the cluster layer.
absl::StatusOr<std::unique_ptr<SharedSystem>> DirectClient(const Env& env, KvstashSystem& d) {
  absl::StatusOr<std::unique_ptr<Client>> c =
      Client::Connect("grpc://" + d.address(), SharedClientOptions(*env.config));
  if (!c.ok()) return c.status();
  std::shared_ptr<Client> client = *std::move(c);
  absl::StatusOr<NamespaceHandle> ns = client->OpenNamespace(BenchNamespace());
  if (!ns.ok()) return ns.status();
  return std::make_unique<SharedSystem>(
      "grpc", [client, ns = *ns] { return NewClientConn(client, ns); },
      std::vector<KvstashSystem*>{&d});
}

absl::Duration CpuOf(const std::vector<pid_t>& pids) {
  absl::Duration sum;
  for (pid_t pid : pids) sum += ReadProcCpuTime(pid).value_or(absl::ZeroDuration());
  return sum;
}

// The systems of the throughput and lookup cells, and every daemon's pid.
struct Systems {
  std::vector<Group> groups;
  std::vector<std::unique_ptr<SharedSystem>> systems;  // grpc, cluster1..3
  std::vector<pid_t> pids;
};

absl::StatusOr<Systems> StartSystems(Env& env) {
  Systems s;
  for (int size : {1, 2, 3}) {
    absl::StatusOr<Group> g = StartGroup(env, absl::StrCat("bench", size), size, 0);
    if (!g.ok()) return g.status();
    s.groups.push_back(*std::move(g));
    for (const auto& d : s.groups.back().daemons) s.pids.push_back(d->server_pid());
  }
  absl::StatusOr<std::unique_ptr<SharedSystem>> direct = DirectClient(env, *s.groups[0].daemons[0]);
  if (!direct.ok()) return direct.status();
  s.systems.push_back(*std::move(direct));
  for (const Group& g : s.groups) {
    absl::StatusOr<std::unique_ptr<SharedSystem>> c = ClusterClient(env, g);
    if (!c.ok()) return c.status();
    s.systems.push_back(*std::move(c));
  }
  return s;
}

// Stores the prompt again before every lookup cell: the put cells in between evict it.
void RunLookupCells(const RunConfig& config, Systems& s, ConnPool& pool, ClusterSuiteOutput* out) {
  const std::vector<BenchKey> prompt = PromptKeys(config.lookup_keys);
  const std::vector<char> value(config.lookup_chunk_bytes, 'p');
  for (auto& system : s.systems) {
    if (system->transport() == std::string("cluster2")) continue;
    absl::StatusOr<std::vector<Conn*>> conns = pool.Get(*system, 1);
    if (!conns.ok()) continue;
    for (const BenchKey& key : prompt) (void)(*conns)[0]->Put(key, value);
    OpPlan plan;
    plan.op = Op::kLookup;
    plan.prompt = prompt;
    Sample sample{"kvstash", system->transport(), Op::kLookup, config.lookup_chunk_bytes,
                  1,         config.lookup_keys,  {}};
    SettleServers(s.pids, "a lookup cell", &out->notes);
    sample.result = RunCell(absl::MakeSpan(conns->data(), 1), plan, config.limits);
    out->samples.push_back(std::move(sample));
  }
}

// Runs one system's get and put cells, charging the CPU of the daemons and of this
// process to them.
void RunThroughput(SharedSystem& system, const CellSpec& cell, const RunConfig& config,
                   ConnPool* pool, ClusterSuiteOutput* out,
                   std::map<std::string, std::vector<double>>* cores) {
  std::vector<pid_t> pids = *cell.servers;
  pids.push_back(getpid());
  const absl::Duration before = CpuOf(pids);
  const size_t first = out->samples.size();
  RunSystemCells(system, cell, config.limits, pool, &out->samples, &out->notes);
  const absl::Duration cpu = CpuOf(pids) - before;
  double wall = 0;
  for (size_t i = first; i < out->samples.size(); ++i) wall += out->samples[i].result.wall_s;
  if (wall <= 0) return;
  (*cores)[absl::StrCat(system.transport(), " get+put ", FormatBytes(cell.size), " x",
                        cell.clients)]
      .push_back(absl::ToDoubleSeconds(cpu) / wall);
}

void RunRounds(const RunConfig& config, Systems& s, ClusterSuiteOutput* out,
               std::ostream& progress) {
  ConnPool pool;
  std::map<std::string, std::vector<double>> cores;
  uint64_t put_space = 7000;
  const size_t n = s.systems.size();
  for (int round = 0; round < config.rounds; ++round) {
    for (size_t size : config.sizes) {
      const std::vector<char> value(size, static_cast<char>('a' + round));
      std::vector<BenchKey> ws;
      const uint64_t keys = std::clamp<uint64_t>(config.working_set_bytes / size, 8, 512);
      for (uint64_t i = 0; i < keys; ++i) ws.push_back(MakeKey(size, i));
      for (int clients : config.clients) {
        progress << "round " << round + 1 << " size " << FormatBytes(size) << " clients " << clients
                 << "\n";
        CellSpec cell{size, clients, &ws, absl::MakeConstSpan(value), 0, &s.pids};
        for (size_t i = 0; i < n; ++i) {
          cell.put_space = put_space++;
          RunThroughput(*s.systems[(i + round) % n], cell, config, &pool, out, &cores);
        }
      }
    }
    if (config.lookup_keys > 0) {
      progress << "round " << round + 1 << " lookup of " << config.lookup_keys << " chunks\n";
      RunLookupCells(config, s, pool, out);
    }
  }
  for (auto& [label, v] : cores) out->cores_busy.push_back({label, Median(v)});
}

// kill -9 of one member per run, rotating; the member set's reaction as etcd shows it.
// Whether the cluster client `c` still has member `id` in its member set.
bool ClientLists(Client& c, const std::string& id) {
  absl::StatusOr<ClusterStatus> status = c.Cluster();
  if (!status.ok()) return true;
  for (const ClusterMemberStatus& m : status->members) {
    if (m.id == id) return true;
  }
  return false;
}

// Seconds from now until etcd no longer lists `id` and, with a library cluster client,
// until that client dropped it too (client_dropped_s; -1 without one).
void WaitDropped(const Env& env, const Group& g, const std::string& id, Client* client,
                 double timeout_s, ConvergenceSample* c) {
  const absl::Time begin = absl::Now();
  c->dropped_s = c->client_dropped_s = -1;
  while (absl::Now() - begin < absl::Seconds(timeout_s)) {
    const double now = absl::ToDoubleSeconds(absl::Now() - begin);
    if (client != nullptr && c->client_dropped_s < 0 && !ClientLists(*client, id)) {
      c->client_dropped_s = now;
    }
    if (c->dropped_s < 0 && !Listed(env, g, id)) c->dropped_s = now;
    if (c->dropped_s >= 0 && (client == nullptr || c->client_dropped_s >= 0)) return;
    absl::SleepFor(absl::Seconds(kPollS));
  }
}

// kill -9 of one member per run, rotating; the member set's reaction as etcd (and a
// library cluster client, where there is one) shows it.
void RunConvergence(Env& env, int lease_ttl_s, ClusterSuiteOutput* out, std::ostream& progress) {
  const int ttl = lease_ttl_s > 0 ? lease_ttl_s : kDefaultLeaseTtlS;
  absl::StatusOr<Group> g = StartGroup(env, absl::StrCat("converge-ttl", ttl), 3, lease_ttl_s);
  if (!g.ok()) {
    out->notes.push_back(absl::StrCat("convergence with lease_ttl_s ", ttl,
                                      " not measured: ", g.status().ToString()));
    return;
  }
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect("etcd://" + env.etcd + "/" + g->name, SharedClientOptions(*env.config));
  for (int run = 0; run < env.config->rounds; ++run) {
    KvstashSystem& victim = *g->daemons[run % 3];
    const std::string& id = g->ids[run % 3];
    progress << "convergence, lease_ttl_s " << ttl << ": kill -9 " << id << "\n";
    ConvergenceSample c{ttl, 0, 0, -1, kPollS};
    victim.Kill();
    WaitDropped(env, *g, id, client.ok() ? client->get() : nullptr, 3.0 * ttl + 30, &c);
    absl::StatusOr<absl::Duration> restart = victim.Restart();
    if (!restart.ok()) {
      out->notes.push_back(absl::StrCat("restart of ", id, ": ", restart.status().ToString()));
      return;
    }
    c.rejoined_s =
        absl::ToDoubleSeconds(*restart) + PollUntil([&] { return Listed(env, *g, id); }, 30);
    out->convergence.push_back(c);
  }
}

// The host's load averages: the benchmark shares the cores with whatever else runs.
std::string LoadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string one, five, fifteen;
  f >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

}  // namespace

absl::StatusOr<ClusterSuiteOutput> RunClusterSuite(const RunConfig& config,
                                                   std::ostream& progress) {
  ClusterSuiteOutput out;
  out.notes.push_back("load average at the start: " + LoadAverage());
  auto scratch = ScratchDir::Create("kvstash-bench-cluster");
  if (!scratch.ok()) return scratch.status();
  if (config.keep_scratch) (*scratch)->Keep();
  Env env{&config, (*scratch)->path(), "", &out.notes};
  absl::StatusOr<EtcdServer> etcd = StartEtcd("", env.scratch + "/etcd", 20000);
  if (!etcd.ok()) return etcd.status();
  env.etcd = etcd->endpoint;
  out.client_kind = "client library, etcd:// URI";
  {
    absl::StatusOr<Systems> s = StartSystems(env);
    if (!s.ok()) return s.status();
    RunRounds(config, *s, &out, progress);
  }
  out.notes.push_back("load average after the cells: " + LoadAverage());
  RunConvergence(env, 2, &out, progress);
  RunConvergence(env, 0, &out, progress);
  return out;
}

}  // namespace kvstash::bench
