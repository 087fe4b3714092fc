#include "bench/workload.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/bits.h"

namespace kvstash::bench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Releases all workers at once after they finished warming up, so the clock measures the
// cell with every client active.
class StartGate {
 public:
  explicit StartGate(int parties) : waiting_(parties) {}
  void ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--waiting_ == 0) cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void WaitAllArrived() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return waiting_ == 0; });
  }
  void Open(Clock::time_point start, Clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(mu_);
    start_ = start;
    deadline_ = deadline;
    open_ = true;
    cv_.notify_all();
  }
  Clock::time_point deadline() const { return deadline_; }  // valid once opened

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_;
  bool open_ = false;
  Clock::time_point start_, deadline_;
};

struct ThreadStats {
  std::vector<double> latencies_us;
  uint64_t ops = 0, bytes = 0, errors = 0;
  std::string first_error;
  Clock::time_point end;
};

// One operation of `plan`; the caller counts chunk_bytes for each OK put/get.
absl::Status DoOp(Conn& conn, const OpPlan& plan, int thread, uint64_t i, std::vector<char>& buf) {
  switch (plan.op) {
    case Op::kPut:
      return conn.Put(plan.key(thread, i), plan.put_value);
    case Op::kGet: {
      std::vector<BenchKey> keys;
      for (int j = 0; j < plan.batch; ++j) keys.push_back(plan.key(thread, i * plan.batch + j));
      return conn.GetBatch(keys, absl::MakeSpan(buf), plan.chunk_bytes);
    }
    case Op::kLookup: {
      absl::StatusOr<uint32_t> hits = conn.Lookup(plan.prompt);
      if (!hits.ok()) return hits.status();
      if (*hits != plan.prompt.size()) {
        return absl::DataLossError(absl::StrCat(*hits, " of ", plan.prompt.size(), " keys hit"));
      }
      return absl::OkStatus();
    }
  }
  return absl::InternalError("bad op");
}

void Worker(Conn& conn, const OpPlan& plan, const CellLimits& limits, int thread, StartGate& gate,
            ThreadStats& out) {
  std::vector<char> buf(plan.op == Op::kGet ? plan.chunk_bytes * plan.batch : 0);
  const uint64_t op_bytes = plan.op == Op::kLookup ? 0
                            : plan.op == Op::kGet  ? plan.chunk_bytes * plan.batch
                                                   : plan.chunk_bytes;
  uint64_t i = 0;
  Clock::time_point warm_end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(limits.warmup_seconds));
  for (int w = 0; w < limits.warmup_ops && Clock::now() < warm_end; ++w) {
    DoOp(conn, plan, thread, i++, buf).IgnoreError();
  }
  gate.ArriveAndWait();
  const Clock::time_point deadline = gate.deadline();
  out.latencies_us.reserve(std::min<uint64_t>(limits.max_ops_per_thread, 1u << 16));
  for (uint64_t n = 0; n < limits.max_ops_per_thread; ++n) {
    Clock::time_point t0 = Clock::now();
    if (t0 >= deadline) break;
    absl::Status s = DoOp(conn, plan, thread, i++, buf);
    Clock::time_point t1 = Clock::now();
    if (!s.ok()) {
      if (out.errors++ == 0) out.first_error = s.ToString();
      continue;
    }
    out.latencies_us.push_back(SecondsBetween(t0, t1) * 1e6);
    ++out.ops;
    out.bytes += op_bytes;
  }
  out.end = Clock::now();
}

}  // namespace

absl::Status Conn::GetBatch(absl::Span<const BenchKey> keys, absl::Span<char> buf,
                            size_t value_bytes) {
  for (size_t j = 0; j < keys.size(); ++j) {
    size_t size = 0;
    absl::Status s = Get(keys[j], buf.subspan(j * value_bytes, value_bytes), &size);
    if (!s.ok()) return s;
    if (s = ExpectValueBytes(size, value_bytes); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<bool>> Conn::Present(absl::Span<const BenchKey>) {
  return absl::UnimplementedError("no per-key presence check");
}

absl::Status ExpectValueBytes(size_t got, size_t want) {
  if (got == want) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("got ", got, " bytes, want ", want));
}

BenchKey MakeKey(uint64_t space, uint64_t index) {
  uint64_t a = SplitMix64(space * 0x100000001b3ull ^ SplitMix64(index));
  uint64_t b = SplitMix64(a ^ 0x6b767374617368ull);  // "kvstash"
  BenchKey key;
  for (int j = 0; j < 8; ++j) {
    key[j] = static_cast<uint8_t>(a >> (8 * j));
    key[8 + j] = static_cast<uint8_t>(b >> (8 * j));
  }
  return key;
}

std::string KeyHex(const BenchKey& key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int j = 0; j < 16; ++j) {
    out[2 * j] = kHex[key[j] >> 4];
    out[2 * j + 1] = kHex[key[j] & 15];
  }
  return out;
}

const char* OpName(Op op) {
  switch (op) {
    case Op::kPut:
      return "put";
    case Op::kGet:
      return "get";
    case Op::kLookup:
      return "lookup";
  }
  return "?";
}

double Quantile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  size_t rank = static_cast<size_t>(q * static_cast<double>(values.size()));
  if (rank >= values.size()) rank = values.size() - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank),
                   values.end());
  return values[rank];
}

CellResult RunCell(absl::Span<Conn* const> conns, const OpPlan& plan, const CellLimits& limits) {
  const int n = static_cast<int>(conns.size());
  StartGate gate(n);
  std::vector<ThreadStats> stats(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int t = 0; t < n; ++t) {
    threads.emplace_back(Worker, std::ref(*conns[t]), std::cref(plan), std::cref(limits), t,
                         std::ref(gate), std::ref(stats[t]));
  }
  gate.WaitAllArrived();
  const Clock::time_point start = Clock::now();
  gate.Open(start, start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(limits.seconds)));
  for (std::thread& t : threads) t.join();

  CellResult r;
  std::vector<double> all;
  Clock::time_point end = start;
  for (ThreadStats& s : stats) {
    r.ops += s.ops;
    r.bytes += s.bytes;
    if (s.errors > 0 && r.errors == 0) r.first_error = s.first_error;
    r.errors += s.errors;
    end = std::max(end, s.end);
    all.insert(all.end(), s.latencies_us.begin(), s.latencies_us.end());
  }
  r.wall_s = SecondsBetween(start, end);
  if (r.wall_s > 0) {
    r.gbps = static_cast<double>(r.bytes) / r.wall_s / 1e9;
    r.ops_per_s = static_cast<double>(r.ops) / r.wall_s;
  }
  r.p50_us = Quantile(all, 0.50);
  r.p99_us = Quantile(all, 0.99);
  return r;
}

}  // namespace kvstash::bench
