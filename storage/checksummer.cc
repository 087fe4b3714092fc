#include "storage/checksummer.h"

#include <pthread.h>

#include <utility>

namespace kvstash::storage {

Checksummer::Checksummer(const Options& options)
    : options_(options), thread_([this] { Loop(); }) {}

Checksummer::~Checksummer() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void Checksummer::Enqueue(const ChunkRef& chunk) {
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= options_.queue_chunks) {
    ++dropped_;
    return;
  }
  queue_.push_back(chunk);
}

uint64_t Checksummer::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

void Checksummer::Loop() {
  pthread_setname_np(pthread_self(), "kvstash-cksum");
  for (;;) {
    std::weak_ptr<const StoredChunk> next;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Checksummer* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stop_ || !self->queue_.empty();
          },
          this));
      if (stop_) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    if (ChunkRef chunk = next.lock()) chunk->checksum();
  }
}

}  // namespace kvstash::storage
