// A fixed pool of worker threads that runs the *Async calls.
//
// Thread-safety: Submit may be called from any thread. The destructor runs every task
// already submitted (so each future a caller holds resolves), then joins the workers.
#pragma once

#include <deque>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace kvstash::client_internal {

class Executor {
 public:
  // REQUIRES: threads >= 1.
  explicit Executor(int threads);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `fn` on a worker; the future holds its result.
  std::future<absl::Status> Submit(std::function<absl::Status()> fn);
  // Runs `task` on a worker; once the destructor has begun, on the calling thread.
  void Post(std::function<void()> task);

 private:
  void WorkerLoop();

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace kvstash::client_internal
