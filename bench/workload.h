// Timed workload loops: N client threads, each on its own connection, run one operation
// (put, get or lookup) against one system for a bounded time or op count, recording every
// operation's latency. The result is throughput over the measured wall time plus latency
// percentiles over all operations of all threads.
//
// Thread-safety: a Conn is used by exactly one thread at a time. RunCell is called from
// one thread and starts/joins its own worker threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kvstash::bench {

// A chunk key; the same 16 bytes as kvstash::Key128. Peers store it as 32 hex characters.
using BenchKey = std::array<uint8_t, 16>;

// Deterministic, well-spread key for (space, index): different spaces never collide.
BenchKey MakeKey(uint64_t space, uint64_t index);
// 32 lowercase hex characters.
std::string KeyHex(const BenchKey& key);

// One client thread's connection to one system under test.
class Conn {
 public:
  virtual ~Conn() = default;
  // Stores `value` under `key` (overwriting or adding, as the system does).
  virtual absl::Status Put(const BenchKey& key, absl::Span<const char> value) = 0;
  // Copies the value of `key` into `buf` and sets *size. NOT_FOUND when absent;
  // RESOURCE_EXHAUSTED when larger than buf.
  virtual absl::Status Get(const BenchKey& key, absl::Span<char> buf, size_t* size) = 0;
  // How many of `keys` (a prompt's ordered chunk keys) are present, in one request.
  virtual absl::StatusOr<uint32_t> Lookup(absl::Span<const BenchKey> keys) = 0;
  // Per key, whether it is present, in one round trip (UNIMPLEMENTED where the system has
  // no such form).
  virtual absl::StatusOr<std::vector<bool>> Present(absl::Span<const BenchKey> keys);
  // Gets `keys` (a prompt's chunks) into consecutive `value_bytes` slices of `buf`; an
  // error unless every value is there with exactly `value_bytes`. Default: one Get per
  // key; a system with batched reads does it in one request.
  virtual absl::Status GetBatch(absl::Span<const BenchKey> keys, absl::Span<char> buf,
                                size_t value_bytes);
};

// OK when a get returned `want` bytes, else DATA_LOSS naming both sizes.
absl::Status ExpectValueBytes(size_t got, size_t want);

enum class Op { kPut, kGet, kLookup };
const char* OpName(Op op);

// What one thread does for its i-th operation (i counts from 0 for that thread, warm-up
// operations included). Must be thread-safe.
struct OpPlan {
  Op op = Op::kGet;
  size_t chunk_bytes = 0;  // value size for put/get; bytes counted per op
  // Key of thread t's i-th op (put/get).
  std::function<BenchKey(int thread, uint64_t i)> key;
  // Prompt keys for lookup; every key is expected to be present.
  absl::Span<const BenchKey> prompt;
  absl::Span<const char> put_value;  // chunk_bytes bytes
  // Gets: keys per request, each request one GetBatch. Thread t's i-th request asks for
  // key(t, i * batch + j), j < batch; bytes count chunk_bytes per key, latency per request.
  int batch = 1;
};

struct CellLimits {
  double seconds = 1.5;                  // measured phase per cell
  uint64_t max_ops_per_thread = 200000;  // stops earlier when reached
  int warmup_ops = 2;                    // per thread, before the clock starts
  double warmup_seconds = 0.2;           // ... or at most this long
};

struct CellResult {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  std::string first_error;
  double wall_s = 0;
  double gbps = 0;  // bytes / wall_s / 1e9
  double ops_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// Runs `plan` with one thread per entry of `conns` (the cell's client count).
CellResult RunCell(absl::Span<Conn* const> conns, const OpPlan& plan, const CellLimits& limits);

// q-quantile (0..1) of `values` (nearest rank); reorders values. 0 when empty.
double Quantile(std::vector<double>& values, double q);

}  // namespace kvstash::bench
