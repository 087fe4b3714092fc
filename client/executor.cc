#include "client/executor.h"

#include <memory>
#include <utility>

namespace kvstash::client_internal {

Executor::Executor(int threads) {
  workers_.reserve(threads);
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

Executor::~Executor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

std::future<absl::Status> Executor::Submit(std::function<absl::Status()> fn) {
  // std::function needs a copyable callable, so the promise is shared.
  auto promise = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> future = promise->get_future();
  Post([promise, fn = std::move(fn)] { promise->set_value(fn()); });
  return future;
}

void Executor::Post(std::function<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back(std::move(task));
      return;
    }
  }
  // Workers may be gone; the task still runs, so whatever waits on it is answered.
  task();
}

void Executor::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      // Drain before stopping: a submitted call's future must always resolve.
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace kvstash::client_internal
