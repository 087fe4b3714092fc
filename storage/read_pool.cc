#include "storage/read_pool.h"

#include <utility>

namespace kvstash::storage {

ReadPool::ReadPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

ReadPool::~ReadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void ReadPool::Schedule(Task task) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back(std::move(task));
      return;
    }
  }
  std::move(task)();  // being destroyed: run it here rather than lose it
}

void ReadPool::Loop() {
  for (;;) {
    Task task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    std::move(task)();
  }
}

}  // namespace kvstash::storage
