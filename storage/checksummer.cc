#include "storage/checksummer.h"

#include <utility>

#include "storage/background_thread.h"

namespace kvstash::storage {

Checksummer::Checksummer(const Options& options, std::function<ChunkRef(const ChunkId&)> lookup)
    : options_(options), lookup_(std::move(lookup)), thread_([this] { Loop(); }) {}

Checksummer::~Checksummer() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void Checksummer::Enqueue(const ChunkId& id) {
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= options_.queue_chunks) {
    ++dropped_;
    return;
  }
  queue_.push_back(id);
}

uint64_t Checksummer::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

void Checksummer::Loop() {
  SetUpBackgroundThread("kvstash-cksum", /*low_priority=*/false);
  for (;;) {
    ChunkId next;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Checksummer* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stop_ || !self->queue_.empty();
          },
          this));
      if (stop_) return;
      next = queue_.front();
      queue_.pop_front();
    }
    if (ChunkRef chunk = lookup_(next)) chunk->BackgroundChecksum(options_.yield_every_bytes);
  }
}

}  // namespace kvstash::storage
