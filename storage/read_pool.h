// ReadPool: threads that run blocking reads (NVMe) for callers that must not block, such
// as gRPC's callback threads: a 4 MiB NVMe read takes milliseconds, and while a callback
// thread waits on it, every other call on that thread waits too.
//
// Thread-safety: thread-safe. The destructor runs every task still queued, then joins.
#pragma once

#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace kvstash::storage {

class ReadPool {
 public:
  using Task = absl::AnyInvocable<void() &&>;

  // REQUIRES: threads >= 1.
  explicit ReadPool(int threads);
  ~ReadPool();
  ReadPool(const ReadPool&) = delete;
  ReadPool& operator=(const ReadPool&) = delete;

  // Runs `task` on one of the threads, in submission order as threads free up (on the
  // calling thread once destruction began).
  void Schedule(Task task);

 private:
  void Loop();

  absl::Mutex mu_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace kvstash::storage
