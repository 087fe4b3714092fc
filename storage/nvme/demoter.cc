#include "storage/nvme/demoter.h"

#include <utility>

#include "storage/background_thread.h"
#include "storage/nvme/rocksdb_tier.h"

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

void Demoter::AddLocked(const ChunkId& id, ChunkRef chunk, bool cleaning) {
  pinned_bytes_ += chunk->meta().size_bytes;
  pending_[id] = Item{std::move(chunk), cleaning};
  queue_.push_back(id);
  ++queued_;
}

void Demoter::WithdrawLocked(const ChunkId& id) {
  auto it = pending_.find(id);
  pinned_bytes_ -= it->second.chunk->meta().size_bytes;
  pending_.erase(it);  // its id stays in queue_; Next skips it
  --queued_;
}

bool Demoter::Enqueue(const ChunkId& id, ChunkRef chunk, absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(id);
  if (it != pending_.end()) {
    it->second.cleaning = false;  // evicted while being cleaned: now a demotion
    return true;
  }
  if (stopping_) {
    ++counters_.drops;
    return false;
  }
  AddLocked(id, std::move(chunk), /*cleaning=*/false);
  if (WithinBounds()) return true;
  // Queued already, so readers find it while we wait.
  mu_.AwaitWithTimeout(absl::Condition(this, &Demoter::WithinBounds), wait);
  if (WithinBounds()) return true;
  it = pending_.find(id);
  if (it == pending_.end() || it->second.in_flight) return true;  // written or on its way
  WithdrawLocked(id);
  ++counters_.drops;
  return false;
}

bool Demoter::TryClean(const ChunkId& id, ChunkRef chunk) {
  absl::MutexLock lock(&mu_);
  const uint64_t size = chunk->meta().size_bytes;
  // Half of each bound, but one cleaning at a time always (chunks above half the bound).
  const bool room = pending_.empty() || (2 * (queued_ + 1) <= queue_chunks_ &&
                                         2 * (pinned_bytes_ + size) <= queue_bytes_);
  if (stopping_ || !room || pending_.contains(id)) return false;
  AddLocked(id, std::move(chunk), /*cleaning=*/true);
  return true;
}

bool Demoter::Pending(const ChunkId& id) const {
  absl::MutexLock lock(&mu_);
  return pending_.contains(id);
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
    WithdrawLocked(id);
  }
  return true;
}

std::vector<ChunkId> Demoter::PendingOf(const Key128& ns) const {
  absl::MutexLock lock(&mu_);
  std::vector<ChunkId> out;
  for (const auto& [id, item] : pending_) {
    if (id.ns == ns && !item.cancelled) out.push_back(id);
  }
  return out;
}

void Demoter::Drain() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](absl::flat_hash_map<ChunkId, Item>* p) { return p->empty(); }, &pending_));
}

DemoterCounters Demoter::Counters() const {
  absl::MutexLock lock(&mu_);
  DemoterCounters c = counters_;
  c.pending = pending_.size();
  return c;
}

bool Demoter::Next(ChunkId* id, ChunkRef* chunk) {
  for (;;) {
    auto ready = [this]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
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
  SetUpBackgroundThread("kvstash-demote", tier_->options().low_priority_background);
  absl::MutexLock lock(&mu_);
  ChunkId id;
  ChunkRef chunk;
  while (Next(&id, &chunk)) {
    mu_.Unlock();
    const bool ok = tier_->Put(id, *chunk, WriteMode::kDeferred).ok();
    chunk.reset();
    mu_.Lock();
    auto it = pending_.find(id);
    const bool cleaning = it != pending_.end() && it->second.cleaning;
    ++(!ok ? counters_.failures : cleaning ? counters_.cleanings : counters_.demotions);
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
