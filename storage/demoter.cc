#include "storage/demoter.h"

#include <utility>

#include "storage/rocksdb_tier.h"

namespace kvstash::storage {

Demoter::Demoter(RocksDbTier* tier, int threads, size_t queue_chunks, uint64_t queue_bytes)
    : tier_(tier), queue_chunks_(queue_chunks), queue_bytes_(queue_bytes) {
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

Demoter::~Demoter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

bool Demoter::Enqueue(const ChunkId& id, ChunkRef chunk) {
  absl::MutexLock lock(&mu_);
  if (pending_.contains(id)) return true;
  const uint64_t size = chunk->meta().size_bytes;
  if (queued_ >= queue_chunks_ || pinned_bytes_ + size > queue_bytes_ || stopping_) {
    ++counters_.drops;
    return false;
  }
  pinned_bytes_ += size;
  pending_[id] = Pending{std::move(chunk)};
  queue_.push_back(id);
  ++queued_;
  return true;
}

ChunkRef Demoter::Find(const ChunkId& id) const {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(id);
  return it == pending_.end() || it->second.cancelled ? nullptr : it->second.chunk;
}

bool Demoter::Cancel(const ChunkId& id) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second.cancelled) return false;
  if (it->second.in_flight) {
    it->second.cancelled = true;  // the worker deletes what it wrote
  } else {
    pinned_bytes_ -= it->second.chunk->meta().size_bytes;
    pending_.erase(it);  // its id stays in queue_; Next skips it
    --queued_;
  }
  return true;
}

void Demoter::Drain() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](absl::flat_hash_map<ChunkId, Pending>* p) { return p->empty(); }, &pending_));
}

DemoterCounters Demoter::Counters() const {
  absl::MutexLock lock(&mu_);
  DemoterCounters c = counters_;
  c.pending = pending_.size();
  return c;
}

bool Demoter::Next(ChunkId* id, ChunkRef* chunk) {
  for (;;) {
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
    mu_.Await(absl::Condition(&ready));
    if (queue_.empty()) return false;  // stopping, and everything queued was written
    *id = queue_.front();
    queue_.pop_front();
    auto it = pending_.find(*id);
    if (it == pending_.end() || it->second.in_flight) continue;  // cancelled (or re-queued)
    it->second.in_flight = true;
    --queued_;
    *chunk = it->second.chunk;
    return true;
  }
}

void Demoter::WorkerLoop() {
  absl::MutexLock lock(&mu_);
  ChunkId id;
  ChunkRef chunk;
  while (Next(&id, &chunk)) {
    mu_.Unlock();
    const bool ok = tier_->Put(id, *chunk).ok();
    chunk.reset();
    mu_.Lock();
    ++(ok ? counters_.demotions : counters_.failures);
    auto it = pending_.find(id);
    if (it != pending_.end() && it->second.cancelled) {
      // Deleted while being written: undo before the entry goes, so readers never see the
      // chunk come back from NVMe.
      mu_.Unlock();
      tier_->Delete(id).IgnoreError();  // NOT_FOUND if the write failed
      mu_.Lock();
      it = pending_.find(id);
    }
    if (it != pending_.end()) {
      pinned_bytes_ -= it->second.chunk->meta().size_bytes;
      pending_.erase(it);
    }
  }
}

}  // namespace kvstash::storage
