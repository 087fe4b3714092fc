// Demoter: writes chunks to the NVMe tier on background threads: chunks evicted from DRAM
// (demotions) and, ahead of eviction, cold chunks still in DRAM (cleanings, queued by the
// Cleaner). Writes are WriteMode::kDeferred: durable at the tier's next flush.
//
// The queue is bounded in chunks and in bytes. An eviction past either bound waits up to
// its caller's limit for the queue to shrink (back-pressure on the evicting put: puts then
// run at the disk's pace instead of losing chunks), and is dropped (counted) only if the
// queue is still over the bound then. A queued chunk keeps its DRAM bytes until written;
// the byte bound (a quarter of DRAM, set by the store) keeps enough DRAM evictable that a
// put does not fail because demotion lags. Cleanings use at most half of each bound, so
// they never crowd out demotions. Queued and in-flight chunks stay readable through Find,
// so a chunk is never missing between tiers.
//
// Thread-safety: thread-safe. Destruction writes out what is still queued, then joins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/chunk.h"

namespace kvstash::storage {

class RocksDbTier;

// Which chunks leaving DRAM are worth an NVMe write (ChunkStoreOptions::Nvme::
// admission_min_hits): the one rule for demotion at eviction and for the cleaner.
struct NvmeAdmission {
  uint32_t min_hits = 0;  // 0: every chunk

  // `hits`: reads while in DRAM (IndexEntry::hits); `keep`: its hints ask for NVMe.
  bool Admits(uint32_t hits, bool keep) const { return keep || hits >= min_hits; }
};

struct DemoterCounters {
  uint64_t demotions = 0;  // evicted chunks written to NVMe
  uint64_t cleanings = 0;  // chunks still in DRAM written to NVMe ahead of eviction
  uint64_t drops = 0;      // evictions refused because the queue stayed full
  uint64_t failures = 0;   // NVMe write failed
  uint64_t pending = 0;    // gauge: queued or in flight
};

class Demoter {
 public:
  // REQUIRES: tier outlives this; threads >= 1; queue_chunks >= 1.
  Demoter(RocksDbTier* tier, int threads, size_t queue_chunks, uint64_t queue_bytes);
  ~Demoter();
  Demoter(const Demoter&) = delete;
  Demoter& operator=(const Demoter&) = delete;

  // Queues the evicted `chunk` for writing. When that takes the queue past a bound, waits
  // up to `wait` for it to shrink back; if it did not, withdraws the chunk and returns
  // false (counted as a drop). True without queueing again when `id` is already pending.
  bool Enqueue(const ChunkId& id, ChunkRef chunk, absl::Duration wait = absl::ZeroDuration());
  // Queues `chunk`, still in DRAM, for cleaning if the queue is below half of each bound;
  // false (not a drop) otherwise or when `id` is pending.
  bool TryClean(const ChunkId& id, ChunkRef chunk);
  // Whether `id` is queued or being written.
  bool Pending(const ChunkId& id) const;
  // The chunk while it is queued or being written, else null.
  ChunkRef Find(const ChunkId& id) const;
  // Withdraws a pending demotion of `id` (a delete). A write already under way is undone
  // once it lands. Returns whether one was pending.
  bool Cancel(const ChunkId& id);
  // The pending ids of namespace `ns` (to Cancel when the namespace is cleared).
  std::vector<ChunkId> PendingOf(const Key128& ns) const;
  // Blocks until nothing is queued or in flight.
  void Drain();
  DemoterCounters Counters() const;

 private:
  struct Item {
    ChunkRef chunk;
    bool cleaning = false;  // still in DRAM (TryClean), not evicted
    bool in_flight = false;
    bool cancelled = false;
  };
  void WorkerLoop();
  // Adds an item. REQUIRES: `id` not pending.
  void AddLocked(const ChunkId& id, ChunkRef chunk, bool cleaning)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A chunk larger than the byte bound still gets in when it is alone.
  bool WithinBounds() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return stopping_ ||
           (queued_ <= queue_chunks_ && (pinned_bytes_ <= queue_bytes_ || pending_.size() <= 1));
  }
  // Takes a still-queued item out again (not in flight). REQUIRES: `id` queued.
  void WithdrawLocked(const ChunkId& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the next live queued id; false when stopping and the queue is empty.
  bool Next(ChunkId* id, ChunkRef* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  RocksDbTier* const tier_;
  const size_t queue_chunks_;
  const uint64_t queue_bytes_;
  mutable absl::Mutex mu_;
  std::deque<ChunkId> queue_ ABSL_GUARDED_BY(mu_);  // may hold ids cancelled since
  absl::flat_hash_map<ChunkId, Item> pending_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;          // pending_ entries not yet in flight
  uint64_t pinned_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // payload bytes of pending_ entries
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  DemoterCounters counters_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
};

}  // namespace kvstash::storage
