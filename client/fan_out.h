// FanOutPool: runs the parts of one fan-out (one call per member) at once on a fixed pool
// of threads sized from the member count, the calling thread running parts itself. The
// caller claims every part no worker has started, so it only ever waits for parts that
// are running: a fan-out never waits on a busy pool, also from inside an *Async call or
// another fan-out, and needs no thread of its own.
//
// Thread-safety: thread-safe; Run may be called from any number of threads at once.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace kvstash::client_internal {

class FanOutPool {
 public:
  // Threads never exceed this, however many members there are.
  static constexpr size_t kMaxThreads = 64;

  FanOutPool() = default;
  ~FanOutPool();
  FanOutPool(const FanOutPool&) = delete;
  FanOutPool& operator=(const FanOutPool&) = delete;

  // Grows the pool to min(threads, kMaxThreads) workers; it never shrinks.
  void EnsureThreads(size_t threads);
  // Runs fn(0) .. fn(n - 1), concurrently where workers are free, and returns when all
  // have returned. `fn` must be safe to call concurrently.
  void Run(size_t n, absl::FunctionRef<void(size_t)> fn);
  size_t threads();

 private:
  // One Run's parts; workers and the caller claim parts until none is left.
  struct Batch {
    explicit Batch(size_t n, absl::FunctionRef<void(size_t)> fn) : n(n), fn(fn) {}
    // Claims and runs parts until none is left.
    void Work();
    const size_t n;
    const absl::FunctionRef<void(size_t)> fn;
    absl::Mutex mu;
    size_t next ABSL_GUARDED_BY(mu) = 0;
    size_t finished ABSL_GUARDED_BY(mu) = 0;
    bool all_finished ABSL_GUARDED_BY(mu) = false;
  };
  static bool HasWorkOrStops(FanOutPool* pool) ABSL_NO_THREAD_SAFETY_ANALYSIS;
  void WorkerLoop();

  absl::Mutex mu_;
  std::deque<std::shared_ptr<Batch>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::client_internal
