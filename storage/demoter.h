// Demoter: writes chunks evicted from the DRAM tier to the NVMe tier on background threads,
// so the put path that evicted them never waits for a disk.
//
// The queue is bounded in chunks and in bytes: when either is reached the chunk is dropped
// (counted), never waited for. A queued chunk keeps its DRAM bytes until written; the byte
// bound (a quarter of DRAM, set by the store) keeps enough DRAM evictable that a put never
// fails because demotion lags: the evicting put simply evicts further. Queued and
// in-flight chunks stay readable through Find, so a chunk is never missing between tiers.
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
#include "storage/chunk.h"

namespace kvstash::storage {

class RocksDbTier;

struct DemoterCounters {
  uint64_t demotions = 0;  // written to NVMe
  uint64_t drops = 0;      // refused because the queue was full
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

  // Queues `chunk` for writing; false (counted as a drop) when the queue is full. True
  // without queueing again when `id` is already pending.
  bool Enqueue(const ChunkId& id, ChunkRef chunk);
  // The chunk while it is queued or being written, else null.
  ChunkRef Find(const ChunkId& id) const;
  // Withdraws a pending demotion of `id` (a delete). A write already under way is undone
  // once it lands. Returns whether one was pending.
  bool Cancel(const ChunkId& id);
  // Blocks until nothing is queued or in flight.
  void Drain();
  DemoterCounters Counters() const;

 private:
  struct Pending {
    ChunkRef chunk;
    bool in_flight = false;
    bool cancelled = false;
  };
  void WorkerLoop();
  // Takes the next live queued id; false when stopping and the queue is empty.
  bool Next(ChunkId* id, ChunkRef* chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  RocksDbTier* const tier_;
  const size_t queue_chunks_;
  const uint64_t queue_bytes_;
  mutable absl::Mutex mu_;
  std::deque<ChunkId> queue_ ABSL_GUARDED_BY(mu_);  // may hold ids cancelled since
  absl::flat_hash_map<ChunkId, Pending> pending_ ABSL_GUARDED_BY(mu_);
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;  // pending_ entries not yet in flight
  uint64_t pinned_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // payload bytes of pending_ entries
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  DemoterCounters counters_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
};

}  // namespace kvstash::storage
