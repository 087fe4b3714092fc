#include "bench/scrape_suite.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/kvstash_system.h"
#include "bench/process.h"

namespace kvstash::bench {
namespace {

constexpr uint64_t kFreshPutSpace = 1ull << 61;  // put keys, far above any get key space
constexpr int kPopulateThreads = 4;

class ScrapeSuite {
 public:
  ScrapeSuite(const RunConfig& config, int scrape_ms, std::ostream& progress)
      : config_(config), scrape_ms_(scrape_ms), progress_(progress) {}

  absl::StatusOr<ScrapeSuiteOutput> Run();

 private:
  absl::Status Start();
  absl::Status Conns(int n);
  absl::Status Populate(size_t size, uint64_t ws_keys);
  void RunPair(int round, int pair, Op op, size_t size, int clients, uint64_t ws_keys);
  void RunOne(int round, bool scraped, Op op, size_t size, int clients, uint64_t ws_keys);
  void AddScrapeStats(const ScrapeStats& s);

  const RunConfig& config_;
  const int scrape_ms_;
  std::ostream& progress_;
  std::unique_ptr<ScratchDir> scratch_;
  std::unique_ptr<KvstashSystem> kvstash_;
  std::unique_ptr<Scraper> scraper_;
  std::vector<std::unique_ptr<Conn>> pool_;
  std::vector<char> value_;
  std::atomic<uint64_t> fresh_keys_{0};
  std::vector<double> scrape_p50s_;
  ScrapeSuiteOutput out_;
};

absl::StatusOr<ScrapeSuiteOutput> ScrapeSuite::Run() {
  if (absl::Status s = Start(); !s.ok()) {
    if (scratch_ != nullptr) scratch_->Keep();
    return s;
  }
  size_t max_size = *std::max_element(config_.sizes.begin(), config_.sizes.end());
  value_.resize(max_size);
  std::mt19937_64 rng(42);
  for (char& c : value_) c = static_cast<char>(rng());
  for (int round = 0; round < config_.rounds; ++round) {
    int pair = 0;
    for (size_t size : config_.sizes) {
      const uint64_t ws = std::min(config_.working_set_bytes, config_.budget_bytes / 4);
      const uint64_t ws_keys = std::max<uint64_t>(ws / size, 16);
      if (absl::Status s = Populate(size, ws_keys); !s.ok()) return s;
      for (Op op : {Op::kGet, Op::kPut}) {
        for (int clients : config_.clients) RunPair(round, pair++, op, size, clients, ws_keys);
      }
    }
  }
  if (!scrape_p50s_.empty()) {
    std::sort(scrape_p50s_.begin(), scrape_p50s_.end());
    out_.scrape.p50_ms = scrape_p50s_[scrape_p50s_.size() / 2];
  }
  pool_.clear();
  return std::move(out_);
}

absl::Status ScrapeSuite::Start() {
  auto scratch = ScratchDir::Create("kvstash_bench_scrape");
  if (!scratch.ok()) return scratch.status();
  scratch_ = *std::move(scratch);
  if (config_.keep_scratch) scratch_->Keep();
  std::vector<std::string> sets = {"storage.nvme.enabled=false"};
  sets.insert(sets.end(), config_.kvstash_sets.begin(), config_.kvstash_sets.end());
  KvstashOptions k{config_.kvstashd_path, scratch_->path(), config_.budget_bytes, sets,
                   config_.kvstash_frame_bytes};
  auto system = KvstashSystem::Start(k);
  if (!system.ok()) return system.status();
  kvstash_ = *std::move(system);
  if (kvstash_->metrics_address().empty()) {
    return absl::FailedPreconditionError("kvstashd serves no /metrics (metrics.enabled=false?)");
  }
  scraper_ = std::make_unique<Scraper>(kvstash_->metrics_address(), scrape_ms_);
  progress_ << "kvstashd pid " << kvstash_->server_pid() << ", metrics at "
            << kvstash_->metrics_address() << "; scratch " << scratch_->path() << "\n";
  return absl::OkStatus();
}

absl::Status ScrapeSuite::Conns(int n) {
  while (static_cast<int>(pool_.size()) < n) {
    absl::StatusOr<std::unique_ptr<Conn>> conn = kvstash_->NewConn();
    if (!conn.ok()) return conn.status();
    pool_.push_back(*std::move(conn));
  }
  return absl::OkStatus();
}

// Stores the get working set of `size` (a repeat of a resident key is acknowledged as
// present at once, so later rounds only refill what puts evicted).
absl::Status ScrapeSuite::Populate(size_t size, uint64_t ws_keys) {
  if (absl::Status s = Conns(kPopulateThreads); !s.ok()) return s;
  absl::Span<const char> value(value_.data(), size);
  std::vector<absl::Status> errors(kPopulateThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kPopulateThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = t; i < ws_keys && errors[t].ok(); i += kPopulateThreads) {
        errors[t] = pool_[t]->Put(MakeKey(size, i), value);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : errors) {
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("populate: ", s.message()));
  }
  return absl::OkStatus();
}

// Both variants of one cell, the order alternating so neither always goes first.
void ScrapeSuite::RunPair(int round, int pair, Op op, size_t size, int clients, uint64_t ws_keys) {
  const bool scraped_first = (round + pair) % 2 == 1;
  RunOne(round, scraped_first, op, size, clients, ws_keys);
  RunOne(round, !scraped_first, op, size, clients, ws_keys);
}

void ScrapeSuite::RunOne(int round, bool scraped, Op op, size_t size, int clients,
                         uint64_t ws_keys) {
  if (absl::Status s = Conns(clients); !s.ok()) {
    out_.notes.push_back(absl::StrCat("connect: ", s.ToString()));
    return;
  }
  std::vector<Conn*> conns;
  for (int i = 0; i < clients; ++i) conns.push_back(pool_[i].get());
  OpPlan plan;
  plan.op = op;
  plan.chunk_bytes = size;
  plan.put_value = absl::Span<const char>(value_.data(), size);
  if (op == Op::kPut) {
    plan.key = [this](int, uint64_t) { return MakeKey(kFreshPutSpace, fresh_keys_++); };
  } else {
    plan.key = [size, clients, ws_keys](int t, uint64_t i) {
      return MakeKey(size, (static_cast<uint64_t>(t) + i * clients) % ws_keys);
    };
  }
  if (scraped) scraper_->Start();
  Sample sample{scraped ? kScrapedSystem : "kvstash", "grpc", op, size, clients, 0};
  sample.result = RunCell(conns, plan, config_.limits);
  if (scraped) {
    scraper_->Stop();
    AddScrapeStats(scraper_->Stats());
  }
  const CellResult& r = sample.result;
  progress_ << absl::StrFormat("[round %d/%d] %-4s %-7s x%-2d %-15s %7.3f GB/s p50 %8.1f us%s\n",
                               round + 1, config_.rounds, OpName(op), FormatBytes(size), clients,
                               sample.system, r.gbps, r.p50_us,
                               r.errors > 0 ? absl::StrCat("  errors: ", r.first_error) : "");
  out_.samples.push_back(std::move(sample));
}

void ScrapeSuite::AddScrapeStats(const ScrapeStats& s) {
  ScrapeStats& total = out_.scrape;
  total.scrapes += s.scrapes;
  if (total.failures == 0 && s.failures > 0) total.first_failure = s.first_failure;
  total.failures += s.failures;
  total.max_ms = std::max(total.max_ms, s.max_ms);
  if (s.last_bytes > 0) total.last_bytes = s.last_bytes;
  if (s.scrapes > 0) scrape_p50s_.push_back(s.p50_ms);
}

// (max - min) / median of one variant's rate over the rounds of a cell.
double Spread(const std::vector<Sample>& samples, const Row& row) {
  std::vector<double> v;
  for (const Sample& s : samples) {
    if (s.system == row.system && s.op == row.op && s.chunk_bytes == row.chunk_bytes &&
        s.clients == row.clients && s.result.ops > 0) {
      v.push_back(s.result.gbps);
    }
  }
  if (v.size() < 2 || row.gbps <= 0) return 0;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return (*hi - *lo) / row.gbps;
}

const Row* Scraped(const std::vector<Row>& rows, const Row& base) {
  for (const Row& r : rows) {
    if (r.system == kScrapedSystem && r.op == base.op && r.chunk_bytes == base.chunk_bytes &&
        r.clients == base.clients) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<ScrapeSuiteOutput> RunScrapeSuite(const RunConfig& config, int scrape_ms,
                                                 std::ostream& progress) {
  return ScrapeSuite(config, scrape_ms, progress).Run();
}

void PrintScrapeReport(std::ostream& out, const ScrapeSuiteOutput& result, int scrape_ms) {
  std::vector<Row> rows = MedianRows(result.samples);
  out << absl::StrFormat("%-4s %-8s %7s %11s %11s %8s %10s %10s %9s %9s %s\n", "op", "size",
                         "clients", "GB/s alone", "GB/s scrape", "ratio", "spread", "spread s",
                         "p50 us", "p50 us s", "verdict");
  for (const Row& base : rows) {
    if (base.system != "kvstash") continue;
    const Row* s = Scraped(rows, base);
    if (s == nullptr || base.gbps <= 0) continue;
    const double ratio = s->gbps / base.gbps;
    const double noise = std::max(Spread(result.samples, base), Spread(result.samples, *s));
    const bool within = std::fabs(1 - ratio) <= noise;
    out << absl::StrFormat("%-4s %-8s %7d %11.3f %11.3f %7.3fx %9.1f%% %9.1f%% %9.1f %9.1f %s\n",
                           OpName(base.op), FormatBytes(base.chunk_bytes), base.clients, base.gbps,
                           s->gbps, ratio, 100 * Spread(result.samples, base),
                           100 * Spread(result.samples, *s), base.p50_us, s->p50_us,
                           within ? "within noise" : "OUTSIDE noise");
  }
  const ScrapeStats& st = result.scrape;
  out << absl::StrFormat(
      "scraper: every %d ms, %d scrapes (%d failed%s), %s per scrape, fetch p50 %.2f ms, max "
      "%.2f ms\n",
      scrape_ms, st.scrapes, st.failures,
      st.failures > 0 ? absl::StrCat(": ", st.first_failure) : "", FormatBytes(st.last_bytes),
      st.p50_ms, st.max_ms);
  out << "spread = (max - min) / median over rounds; a ratio is within noise when |1 - ratio| "
         "<= the larger spread\n";
}

absl::Status WriteScrapeJsonLines(const std::string& path, const ScrapeSuiteOutput& result,
                                  int scrape_ms) {
  std::vector<Row> rows = MedianRows(result.samples);
  for (Row& r : rows) {
    const bool scraped = r.system == kScrapedSystem;
    r.system = "kvstash";
    r.json_extra = absl::StrCat(",\"scrape_ms\":", scraped ? scrape_ms : 0);
  }
  return WriteJsonLines(path, rows, RssResult{});
}

}  // namespace kvstash::bench
