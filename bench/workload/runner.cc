#include "bench/workload/runner.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/kvstash_system.h"
#include "bench/report.h"
#include "bench/systems.h"
#include "storage/chunk_store.h"

namespace kvstash::bench::workload {

struct SuiteRunner::Context {
  WorkloadKind kind;
  Trace trace;
  uint64_t working_set_chunks = 0;
  uint64_t wire_chunk_bytes = 0;
  uint64_t max_fetch_chunks = 0;  // the full chunks of the largest request
  SimOptions sim;
  const ResultRow* none = nullptr;
};

namespace {

constexpr uint64_t kMiB = 1ull << 20;

// The largest power of two <= 1 that keeps the working set's wire bytes within `limit`.
double AutoByteScale(uint64_t working_set_bytes, uint64_t limit) {
  double scale = 1;
  while (working_set_bytes * scale > limit && scale > 1.0 / (1 << 20)) scale /= 2;
  return scale;
}

// DRAM pages that chunks fill exactly (no tail slack): the largest power of two dividing
// the chunk, within the daemon's [4 KiB, 1 MiB].
uint64_t PageBytesFor(uint64_t chunk_bytes) {
  uint64_t page = 1ull << 20;
  while (page > 4096 && chunk_bytes % page != 0) page /= 2;
  return page;
}

// A server owned together with the store that talks to it, stopped when the store goes.
template <typename S>
class Owning : public RemoteStore {
 public:
  Owning(std::unique_ptr<S> server, std::unique_ptr<RemoteStore> store)
      : server_(std::move(server)), store_(std::move(store)) {}
  absl::StatusOr<LookupReply> Lookup(absl::Span<const Key128> k, uint64_t s) override {
    return store_->Lookup(k, s);
  }
  absl::StatusOr<FetchReply> Fetch(absl::Span<const Key128> k, uint64_t l) override {
    return store_->Fetch(k, l);
  }
  absl::StatusOr<PutReply> Put(absl::Span<const PutChunk> c) override { return store_->Put(c); }
  S& server() { return *server_; }

 private:
  std::unique_ptr<S> server_;  // destroyed after store_: stops the server
  std::unique_ptr<RemoteStore> store_;
};

}  // namespace

Namespace SuiteRunner::ModelNamespace() const {
  Namespace ns;
  ns.tenant = "workload";
  ns.model_id = "kvstash-workload/" + o_.model.name;
  ns.num_layers = o_.model.layers;
  ns.chunk_tokens = o_.chunk_tokens;
  return ns;
}

absl::StatusOr<std::unique_ptr<FetchAdvisor>> SuiteRunner::NewAdvisor() const {
  FetchAdvisorOptions a;  // the client's bandwidth priors; each run learns its own
  a.prefill = o_.cost.prefill;
  a.kv_bytes_per_token = o_.model.kv_bytes_per_token;
  return FetchAdvisor::Create(a);
}

absl::Status SuiteRunner::Run() {
  auto scratch = ScratchDir::Create("kvstash-workload");
  if (!scratch.ok()) return scratch.status();
  scratch_ = *std::move(scratch);
  if (o_.keep_scratch) scratch_->Keep();
  int done = 0;
  for (WorkloadKind kind : o_.workloads) {
    absl::Status s = RunWorkload(kind);
    if (s.ok()) {
      ++done;
    } else {
      out_ << WorkloadName(kind) << ": not run: " << s << "\n";
    }
  }
  if (o_.keep_scratch) out_ << "server logs and data kept in " << scratch_->path() << "\n";
  return done > 0 ? absl::OkStatus() : absl::InternalError("no workload ran");
}

absl::Status SuiteRunner::RunWorkload(WorkloadKind kind) {
  Context c;
  c.kind = kind;
  absl::StatusOr<Trace> trace = GenerateTrace(kind, o_.trace);
  if (!trace.ok()) return trace.status();
  c.trace = *std::move(trace);
  const KeyChain chain(ModelNamespace());
  c.working_set_chunks = WorkingSetChunks(c.trace, chain);
  c.max_fetch_chunks = LargestRequestChunks(c.trace, o_.chunk_tokens);
  const uint64_t chunk_model_bytes = o_.model.kv_bytes_per_token * o_.chunk_tokens;
  const double byte_scale =
      o_.byte_scale > 0
          ? o_.byte_scale
          : AutoByteScale(c.working_set_chunks * chunk_model_bytes, o_.max_wire_working_set_bytes);
  c.wire_chunk_bytes = std::max<uint64_t>(1, std::llround(chunk_model_bytes * byte_scale));
  c.sim.cost = o_.cost;
  c.sim.chunk_tokens = o_.chunk_tokens;
  c.sim.chunk_model_bytes = chunk_model_bytes;
  c.sim.byte_scale = static_cast<double>(c.wire_chunk_bytes) / chunk_model_bytes;
  c.sim.speedup = o_.speedup;
  // The engine holds at least two of the largest request: running requests' blocks stay.
  c.sim.engine_capacity_chunks =
      std::max<uint64_t>(std::ceil(o_.engine_cache_fraction * c.working_set_chunks),
                         2 * LargestRequestChunks(c.trace, o_.chunk_tokens));
  out_ << absl::StrFormat(
      "\n== %s: %d requests in %d sessions; working set %d chunks of %s (%s); engine cache %d "
      "chunks; %s of each chunk on the wire\n",
      WorkloadName(kind), c.trace.Requests(), c.trace.sessions.size(), c.working_set_chunks,
      FormatBytes(chunk_model_bytes), FormatBytes(c.working_set_chunks * chunk_model_bytes),
      c.sim.engine_capacity_chunks, FormatBytes(c.wire_chunk_bytes));
  for (const StoreSpec& store : o_.stores) {
    if (store.kind == StoreSpec::Kind::kNone)
      reporter_->Add(out_, RunVariant(c, {&store, 0, "-", {}, false}));
  }
  for (double capacity : o_.capacity_fractions) {
    for (const StoreSpec& store : o_.stores) {
      if (store.kind == StoreSpec::Kind::kNone) continue;
      const bool kvstash = store.kind == StoreSpec::Kind::kKvstash;
      for (const std::string& policy : kvstash ? o_.policies : std::vector<std::string>{"-"}) {
        for (const HintOptions& hints : kvstash ? o_.hint_sets : std::vector<HintOptions>{{}}) {
          for (bool advisor : kvstash ? o_.advisor : std::vector<bool>{false}) {
            reporter_->Add(out_, RunVariant(c, {&store, capacity, policy, hints, advisor}));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

ResultRow SuiteRunner::RunVariant(const Context& c, const Variant& v) {
  ResultRow row;
  row.workload = WorkloadName(c.kind);
  row.store = v.store->name;
  row.transport = v.store->kind == StoreSpec::Kind::kNone      ? "-"
                  : v.store->kind != StoreSpec::Kind::kKvstash ? "tcp"
                  : v.store->ucx                               ? "ucx"
                                                               : "grpc";
  row.capacity_fraction = v.capacity_fraction;
  row.policy = v.policy.empty() ? "default" : v.policy;
  row.hints = v.hints.Name();
  row.model = o_.model.name;
  row.byte_scale = c.sim.byte_scale;
  row.working_set_bytes = c.working_set_chunks * c.sim.chunk_model_bytes;
  row.engine_capacity_chunks = c.sim.engine_capacity_chunks;
  const KeyChain chain(ModelNamespace());
  SimOptions sim = c.sim;
  sim.hints = v.hints;
  if (v.store->kind == StoreSpec::Kind::kNone) {
    sim.pi_capacity_chunks = sim.engine_capacity_chunks;
    row.sim = Simulate(c.trace, chain, sim, nullptr);
    return row;
  }
  const uint64_t capacity_chunks =
      std::max<uint64_t>(1, std::ceil(v.capacity_fraction * c.working_set_chunks));
  sim.pi_capacity_chunks = capacity_chunks;
  row.store_capacity_bytes = capacity_chunks * c.wire_chunk_bytes;
  auto dir = ScratchDir::Create(absl::StrCat("run", ++runs_), scratch_->path());
  if (!dir.ok()) {
    row.error = dir.status().ToString();
    return row;
  }
  if (o_.keep_scratch) (*dir)->Keep();
  absl::StatusOr<std::unique_ptr<RemoteStore>> store =
      StartStore(c, v, (*dir)->path(), row.store_capacity_bytes);
  if (!store.ok()) {
    row.error = std::string(store.status().message());
    return row;
  }
  std::unique_ptr<FetchAdvisor> advisor;
  if (v.store->kind == StoreSpec::Kind::kKvstash) {
    row.advisor = v.advisor ? "on" : "off";
    if (v.advisor) {
      absl::StatusOr<std::unique_ptr<FetchAdvisor>> made = NewAdvisor();
      if (!made.ok()) {
        row.error = made.status().ToString();
        return row;
      }
      advisor = *std::move(made);
      sim.advisor = advisor.get();
    }
  }
  row.sim = Simulate(c.trace, chain, sim, store->get());
  if (advisor != nullptr) {
    row.advisor_dram_bytes_per_s = advisor->BandwidthBytesPerSecond(ChunkTier::kDram);
    row.advisor_nvme_bytes_per_s = advisor->BandwidthBytesPerSecond(ChunkTier::kNvme);
  }
  if (auto* kvstash = dynamic_cast<Owning<KvstashSystem>*>(store->get())) {
    absl::StatusOr<KvstashTierStats> stats = kvstash->server().Stats();
    if (stats.ok()) row.kvstash = *stats;
  }
  return row;
}

absl::StatusOr<std::unique_ptr<RemoteStore>> SuiteRunner::StartStore(const Context& c,
                                                                     const Variant& v,
                                                                     const std::string& dir,
                                                                     uint64_t capacity_bytes) {
  if (v.store->kind == StoreSpec::Kind::kKvstash) return StartKvstash(c, v, dir, capacity_bytes);
  PeerOptions p;
  p.scratch_dir = dir;
  // Redis counts its own overhead in maxmemory; about 1 MiB of it is there before any key.
  p.redis_maxmemory_bytes = capacity_bytes + kMiB;
  // memcached wants -m >= 2 * -I and an item a little larger than the value.
  const uint64_t item_mib = std::max<uint64_t>(1, (2 * c.wire_chunk_bytes + kMiB - 1) / kMiB);
  p.memcached_max_item_mib = item_mib;
  p.memcached_memory_mib =
      std::max<uint64_t>({(capacity_bytes + kMiB - 1) / kMiB, 2 * item_mib, 8});
  auto system = v.store->kind == StoreSpec::Kind::kRedis ? StartRedis(o_.redis_path, p)
                                                         : StartMemcached(o_.memcached_path, p);
  if (!system.ok()) return system.status();
  auto conn = (*system)->NewConn();
  if (!conn.ok()) return conn.status();
  return std::unique_ptr<RemoteStore>(new Owning<System>(
      *std::move(system), NewPeerStore(*std::move(conn), c.wire_chunk_bytes, c.max_fetch_chunks)));
}

absl::StatusOr<std::unique_ptr<RemoteStore>> SuiteRunner::StartKvstash(const Context& c,
                                                                       const Variant& v,
                                                                       const std::string& dir,
                                                                       uint64_t capacity_bytes) {
  const uint64_t page = PageBytesFor(c.wire_chunk_bytes);
  KvstashOptions k;
  k.binary = o_.kvstashd_path;
  k.scratch_dir = dir;
  k.dram_budget_bytes = std::max(capacity_bytes, page);
  k.extra_sets = {absl::StrCat("storage.dram.page_bytes=", page)};
  if (v.store->nvme) {
    const uint64_t wire_ws = c.working_set_chunks * c.wire_chunk_bytes;
    const uint64_t nvme = std::max<uint64_t>(kMiB, std::ceil(o_.nvme_fraction * wire_ws));
    k.extra_sets.push_back(absl::StrCat("storage.nvme.capacity_bytes=", nvme));
  } else {
    k.extra_sets.push_back("storage.nvme.enabled=false");
  }
  if (!v.policy.empty()) k.extra_sets.push_back("storage.dram.eviction=" + v.policy);
  if (o_.speedup > 0) {
    // Sessions idle on the daemon's wall clock: the trace's timeout, scaled as its pauses are.
    const int64_t idle_ms = std::max<int64_t>(
        1, std::llround(storage::ChunkStoreOptions::Sessions{}.idle_timeout_ms / o_.speedup));
    k.extra_sets.push_back(absl::StrCat("storage.sessions.idle_timeout_ms=", idle_ms));
  }
  k.extra_sets.insert(k.extra_sets.end(), o_.kvstash_sets.begin(), o_.kvstash_sets.end());
  if (v.store->ucx) {
    k.ucx_tls = o_.ucx_tls;
    k.transport_label = "ucx";
  }
  auto system = KvstashSystem::Start(k);
  if (!system.ok()) return system.status();
  auto client = (*system)->NewClient();
  if (!client.ok()) return client.status();
  auto store =
      NewKvstashStore(*std::move(client), ModelNamespace(), c.wire_chunk_bytes, c.max_fetch_chunks);
  if (!store.ok()) return store.status();
  return std::unique_ptr<RemoteStore>(
      new Owning<KvstashSystem>(*std::move(system), *std::move(store)));
}

}  // namespace kvstash::bench::workload
