#include "client/fan_out.h"

#include <algorithm>
#include <utility>

namespace kvstash::client_internal {

FanOutPool::~FanOutPool() {
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    workers = std::move(workers_);
  }
  for (std::thread& t : workers) t.join();
}

void FanOutPool::EnsureThreads(size_t threads) {
  absl::MutexLock lock(&mu_);
  const size_t want = std::min(threads, kMaxThreads);
  while (!stopping_ && workers_.size() < want) workers_.emplace_back([this] { WorkerLoop(); });
}

size_t FanOutPool::threads() {
  absl::MutexLock lock(&mu_);
  return workers_.size();
}

void FanOutPool::Batch::Work() {
  for (;;) {
    size_t i;
    {
      absl::MutexLock lock(&mu);
      if (next >= n) return;
      i = next++;
    }
    fn(i);
    absl::MutexLock lock(&mu);
    all_finished = ++finished == n;
  }
}

void FanOutPool::Run(size_t n, absl::FunctionRef<void(size_t)> fn) {
  if (n == 0) return;
  if (n == 1) {
    fn(0);
    return;
  }
  auto batch = std::make_shared<Batch>(n, fn);
  {
    absl::MutexLock lock(&mu_);
    // One ticket per part beyond the caller's; a worker taking a ticket of a batch whose
    // parts are all claimed finds nothing to do and never touches `fn`.
    for (size_t i = 1; i < n && i <= workers_.size(); ++i) queue_.push_back(batch);
  }
  batch->Work();
  absl::MutexLock lock(&batch->mu);
  batch->mu.Await(absl::Condition(&batch->all_finished));
}

bool FanOutPool::HasWorkOrStops(FanOutPool* pool) {
  // Called by Await with pool->mu_ held.
  return pool->stopping_ || !pool->queue_.empty();
}

void FanOutPool::WorkerLoop() {
  for (;;) {
    std::shared_ptr<Batch> batch;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&FanOutPool::HasWorkOrStops, this));
      if (queue_.empty()) return;  // stopping, nothing queued
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    batch->Work();
  }
}

}  // namespace kvstash::client_internal
