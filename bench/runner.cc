#include "bench/runner.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/kvstash_system.h"
#include "bench/process.h"
#include "bench/systems.h"

namespace kvstash::bench {
namespace {

// Key spaces (see MakeKey). Get working sets use the chunk size as their space, so
// fresh put keys live far above any size.
constexpr uint64_t kFreshPutSpace = 1ull << 62;
constexpr int kPopulateThreads = 4;

struct Entry {
  std::unique_ptr<System> system;
  KvstashSystem* kvstash = nullptr;  // same object as system, for kvstash only
  std::vector<std::unique_ptr<Conn>> pool;
  bool broken = false;
};

class Runner {
 public:
  Runner(const RunConfig& config, std::ostream& progress) : config_(config), progress_(progress) {}

  absl::StatusOr<RunOutput> Run();

 private:
  absl::Status StartSystems();
  absl::Status StartOne(const std::string& name);
  void Fail(Entry& e, const std::string& what, const absl::Status& s);
  std::vector<Conn*> Conns(Entry& e, int n);
  std::vector<Entry*> Active(int round);
  uint64_t WorkingSetKeys(size_t size) const;
  void PrepareAndPopulate(size_t size, const std::vector<BenchKey>& keys);
  void Populate(Entry& e, const std::vector<BenchKey>& keys, size_t size);
  OpPlan PlanFor(const Entry& e, Op op, size_t size, int clients, uint64_t ws_keys);
  void RunCells(int round, Op op, size_t size, int clients, uint64_t ws_keys);
  void RunSize(int round, size_t size);
  void RunLookup(int round);
  Entry* KvstashEntry();
  void FillTier();
  void ReadRss();

  const RunConfig& config_;
  std::ostream& progress_;
  std::unique_ptr<ScratchDir> scratch_;
  std::vector<Entry> entries_;
  std::vector<char> value_;  // random payload, as large as the largest chunk
  std::vector<BenchKey> prompt_;
  std::atomic<uint64_t> fresh_keys_{0};
  RunOutput out_;
};

std::vector<char> RandomBytes(size_t n) {
  std::vector<char> v(n);
  std::mt19937_64 rng(42);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  return v;
}

absl::StatusOr<RunOutput> Runner::Run() {
  auto scratch = ScratchDir::Create("kvstash_bench");
  if (!scratch.ok()) return scratch.status();
  scratch_ = *std::move(scratch);
  if (config_.keep_scratch) scratch_->Keep();
  progress_ << "scratch dir (logs): " << scratch_->path() << "\n";
  absl::Status s = StartSystems();
  if (!s.ok()) {
    scratch_->Keep();
    return s;
  }
  size_t max_size = config_.fill_chunk_bytes;
  for (size_t size : config_.sizes) max_size = std::max(max_size, size);
  value_ = RandomBytes(std::max(max_size, config_.lookup_chunk_bytes));
  prompt_ = PromptKeys(config_.lookup_keys);
  if (config_.fill_tier) FillTier();
  for (int round = 0; round < config_.rounds; ++round) {
    for (size_t size : config_.sizes) RunSize(round, size);
    if (config_.lookup_keys > 0) RunLookup(round);
  }
  if (config_.fill_tier) {
    ReadRss();
  } else {
    out_.rss.skipped_reason = "--no_fill";
  }
  for (Entry& e : entries_) e.pool.clear();
  entries_.clear();  // stops and reaps every server
  return std::move(out_);
}

absl::Status Runner::StartSystems() {
  for (const std::string& name : config_.systems) {
    absl::Status s = StartOne(name);
    if (!s.ok()) {
      std::string note = absl::StrCat("skipped ", name, ": ", s.message());
      progress_ << note << "\n";
      out_.notes.push_back(note);
    }
  }
  if (entries_.empty()) return absl::FailedPreconditionError("no system could be started");
  return absl::OkStatus();
}

absl::Status Runner::StartOne(const std::string& name) {
  PeerOptions peer;
  peer.scratch_dir = scratch_->path();
  uint64_t ws = std::min(config_.working_set_bytes, config_.budget_bytes / 4);
  peer.memcached_memory_mib = std::max<uint64_t>(1024, 2 * (ws >> 20) + 256);
  Entry e;
  if (name == "kvstash") {
    if (FindExecutable(config_.kvstashd_path).empty()) {
      return absl::NotFoundError(absl::StrCat("kvstashd not found at '", config_.kvstashd_path,
                                              "' (build it or pass --kvstashd)"));
    }
    // The sweep measures the DRAM tier (rows tier=dram); --nvme measures the NVMe tier.
    std::vector<std::string> sets = {"storage.nvme.enabled=false"};
    sets.insert(sets.end(), config_.kvstash_sets.begin(), config_.kvstash_sets.end());
    KvstashOptions k{config_.kvstashd_path, scratch_->path(), config_.budget_bytes, sets,
                     config_.kvstash_frame_bytes};
    auto system = KvstashSystem::Start(k);
    if (!system.ok()) return system.status();
    e.kvstash = system->get();
    e.system = *std::move(system);
  } else if (name == "redis" || name == "memcached") {
    auto system = name == "redis" ? StartRedis(config_.redis_path, peer)
                                  : StartMemcached(config_.memcached_path, peer);
    if (!system.ok()) return system.status();
    e.system = *std::move(system);
  } else {
    return absl::InvalidArgumentError("unknown system (kvstash, redis, memcached)");
  }
  progress_ << "started " << name << " (pid " << e.system->server_pid() << ")\n";
  entries_.push_back(std::move(e));
  return absl::OkStatus();
}

void Runner::Fail(Entry& e, const std::string& what, const absl::Status& s) {
  std::string note =
      absl::StrCat(e.system->name(), ": ", what, ": ", s.ToString(), "; no further cells for it");
  if (std::string exit = e.system->ServerExit(); !exit.empty()) {
    absl::StrAppend(&note, "; its server ", exit);
  }
  progress_ << note << " (logs kept in " << scratch_->path() << ")\n";
  out_.notes.push_back(note);
  scratch_->Keep();
  e.broken = true;
  e.pool.clear();
}

// The first n connections of e's pool, opened as needed; empty (and e broken) on failure.
std::vector<Conn*> Runner::Conns(Entry& e, int n) {
  while (!e.broken && static_cast<int>(e.pool.size()) < n) {
    absl::StatusOr<std::unique_ptr<Conn>> conn = e.system->NewConn();
    if (!conn.ok()) {
      Fail(e, "connect", conn.status());
      break;
    }
    e.pool.push_back(*std::move(conn));
  }
  std::vector<Conn*> out;
  if (e.broken) return out;
  for (int i = 0; i < n; ++i) out.push_back(e.pool[i].get());
  return out;
}

// Working systems, in an order rotated per round so none is always measured first.
std::vector<Entry*> Runner::Active(int round) {
  std::vector<Entry*> out;
  const size_t n = entries_.size();
  for (size_t i = 0; i < n; ++i) {
    Entry& e = entries_[(i + static_cast<size_t>(round)) % n];
    if (!e.broken) out.push_back(&e);
  }
  return out;
}

uint64_t Runner::WorkingSetKeys(size_t size) const {
  uint64_t ws = std::min(config_.working_set_bytes, config_.budget_bytes / 4);
  int max_clients = 1;
  for (int c : config_.clients) max_clients = std::max(max_clients, c);
  return std::max<uint64_t>(ws / size, static_cast<uint64_t>(max_clients));
}

void Runner::PrepareAndPopulate(size_t size, const std::vector<BenchKey>& keys) {
  for (Entry* e : Active(0)) {
    e->pool.clear();
    absl::Status s = e->system->PrepareForSize(size);
    if (!s.ok()) {
      Fail(*e, absl::StrCat("prepare for ", FormatBytes(size)), s);
      continue;
    }
    Populate(*e, keys, size);
  }
}

// Stores every key with the first `size` payload bytes, then reads one back and compares,
// so a broken client or server shows up as an error instead of a fast number.
void Runner::Populate(Entry& e, const std::vector<BenchKey>& keys, size_t size) {
  std::vector<Conn*> conns = Conns(e, kPopulateThreads);
  if (conns.empty()) return;
  absl::Span<const char> value(value_.data(), size);
  std::vector<absl::Status> errors(conns.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < conns.size(); ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < keys.size() && errors[t].ok(); i += conns.size()) {
        errors[t] = conns[t]->Put(keys[i], value);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : errors) {
    if (!s.ok()) return Fail(e, absl::StrCat("populate ", FormatBytes(size)), s);
  }
  std::vector<char> back(size);
  size_t got = 0;
  absl::Status s = conns[0]->Get(keys[0], absl::MakeSpan(back), &got);
  if (s.ok() && (got != size || std::memcmp(back.data(), value.data(), size) != 0)) {
    s = absl::DataLossError(absl::StrCat("read back ", got, " bytes that differ from the put"));
  }
  if (!s.ok()) Fail(e, absl::StrCat("verify ", FormatBytes(size)), s);
}

OpPlan Runner::PlanFor(const Entry& e, Op op, size_t size, int clients, uint64_t ws_keys) {
  OpPlan plan;
  plan.op = op;
  plan.chunk_bytes = size;
  plan.put_value = absl::Span<const char>(value_.data(), size);
  plan.prompt = prompt_;
  if (op == Op::kPut && e.system->NeedsFreshPutKeys()) {
    plan.key = [this](int, uint64_t) { return MakeKey(kFreshPutSpace, fresh_keys_++); };
  } else {
    // Threads start on different keys and stride by the client count.
    plan.key = [size, clients, ws_keys](int t, uint64_t i) {
      return MakeKey(size, (static_cast<uint64_t>(t) + i * clients) % ws_keys);
    };
  }
  return plan;
}

void Runner::RunCells(int round, Op op, size_t size, int clients, uint64_t ws_keys) {
  for (Entry* e : Active(round)) {
    std::vector<Conn*> conns = Conns(*e, clients);
    if (conns.empty()) continue;
    OpPlan plan = PlanFor(*e, op, size, clients, ws_keys);
    Sample sample{e->system->name(),
                  e->system->transport(),
                  op,
                  size,
                  clients,
                  op == Op::kLookup ? config_.lookup_keys : 0};
    sample.result = RunCell(conns, plan, config_.limits);
    const CellResult& r = sample.result;
    progress_ << absl::StrFormat(
        "[round %d/%d] %-6s %-7s x%-2d %-9s %7.3f GB/s %9.1f ops/s p50 %8.1f us p99 %8.1f us%s\n",
        round + 1, config_.rounds, OpName(op),
        op == Op::kLookup ? absl::StrCat(config_.lookup_keys, "keys") : FormatBytes(size), clients,
        e->system->name(), r.gbps, r.ops_per_s, r.p50_us, r.p99_us,
        r.errors > 0 ? absl::StrCat("  ", r.errors, " errors: ", r.first_error) : "");
    progress_.flush();
    const bool server_gone = r.errors > 0 && !e->system->ServerExit().empty();
    const std::string first_error = r.first_error;
    out_.samples.push_back(std::move(sample));
    if (server_gone) {
      Fail(*e, absl::StrCat(OpName(op), " ", FormatBytes(size)),
           absl::UnavailableError(first_error));
    }
  }
}

void Runner::RunSize(int round, size_t size) {
  const uint64_t ws_keys = WorkingSetKeys(size);
  std::vector<BenchKey> keys;
  for (uint64_t i = 0; i < ws_keys; ++i) keys.push_back(MakeKey(size, i));
  PrepareAndPopulate(size, keys);
  // Gets first: kvstash puts use fresh keys and would otherwise evict the working set
  // when the budget is small.
  for (int clients : config_.clients) RunCells(round, Op::kGet, size, clients, ws_keys);
  for (int clients : config_.clients) RunCells(round, Op::kPut, size, clients, ws_keys);
  if (config_.fill_tier) ReadRss();  // kept if the daemon dies later
}

void Runner::RunLookup(int round) {
  PrepareAndPopulate(config_.lookup_chunk_bytes, prompt_);
  for (int clients : config_.clients) {
    RunCells(round, Op::kLookup, config_.lookup_chunk_bytes, clients, prompt_.size());
  }
}

Entry* Runner::KvstashEntry() {
  for (Entry& e : entries_) {
    if (e.kvstash != nullptr && !e.broken) return &e;
  }
  return nullptr;
}

// Puts fresh chunks worth fill_factor x budget, so the tier is full (and evicting) before
// anything is measured: a long-running daemon's arena is touched once, while first-touch
// page faults of fresh memory would otherwise dominate the first GiBs of puts (several
// times slower in a VM). Its rate is reported as the cold fill rate.
void Runner::FillTier() {
  RssResult& rss = out_.rss;
  rss.budget_bytes = config_.budget_bytes;
  rss.fill_chunk_bytes = config_.fill_chunk_bytes;
  rss.fill_clients = config_.fill_clients;
  Entry* k = KvstashEntry();
  if (k == nullptr) return;
  std::vector<Conn*> conns = Conns(*k, rss.fill_clients);
  if (conns.empty()) return;
  const double total = config_.fill_factor * static_cast<double>(config_.budget_bytes);
  CellLimits limits;
  limits.seconds = 600;
  limits.warmup_ops = 0;
  limits.max_ops_per_thread = static_cast<uint64_t>(
      total / static_cast<double>(rss.fill_chunk_bytes) / rss.fill_clients + 1);
  progress_ << "filling the kvstash DRAM tier with " << FormatBytes(static_cast<uint64_t>(total))
            << " of " << FormatBytes(rss.fill_chunk_bytes) << " chunks...\n";
  OpPlan plan = PlanFor(*k, Op::kPut, rss.fill_chunk_bytes, rss.fill_clients, 1);
  CellResult r = RunCell(conns, plan, limits);
  rss.fill_bytes = r.bytes;
  rss.fill_gbps = r.gbps;
  rss.errors = r.errors;
  progress_ << absl::StrFormat("  filled at %.3f GB/s (cold arena), %d errors\n", r.gbps, r.errors);
}

// Peak RSS over the daemon's whole life (the fill included) and its current RSS. Called
// after every chunk size and at the end; a failed read keeps the previous values.
void Runner::ReadRss() {
  RssResult& rss = out_.rss;
  Entry* k = KvstashEntry();
  if (k == nullptr) {
    if (!rss.measured) rss.skipped_reason = "kvstash not running";
    if (rss.measured) rss.note = "kvstashd stopped early; values from its last reading";
    return;
  }
  absl::StatusOr<KvstashTierStats> stats = k->kvstash->Stats();
  if (stats.ok()) rss.dram_used_bytes = stats->dram_used_bytes;
  absl::StatusOr<uint64_t> peak = ReadPeakRssBytes(k->system->server_pid());
  absl::StatusOr<uint64_t> now = ReadRssBytes(k->system->server_pid());
  if (!peak.ok() || !now.ok()) {
    if (!rss.measured) {
      rss.skipped_reason =
          std::string(peak.ok() ? now.status().message() : peak.status().message());
    }
    return;
  }
  rss.peak_rss_bytes = *peak;
  rss.rss_bytes = *now;
  rss.measured = true;
}

}  // namespace

absl::StatusOr<RunOutput> RunBenchmark(const RunConfig& config, std::ostream& progress) {
  return Runner(config, progress).Run();
}

}  // namespace kvstash::bench
