// Cleaner: writes the coldest DRAM chunks to the NVMe tier before they are evicted, so
// that evicting them later frees their memory at once (they are "clean": NVMe has them,
// and Demote skips chunks NVMe has) and a burst of puts does not have to wait for, or drop,
// demotions.
//
// Once DRAM use reaches (100 - window_percent)% of the budget, the cleaner keeps the
// coldest window_percent of DRAM (by the eviction policy's order) clean: it queues the dirty
// chunks there to the Demoter (TryClean, half the queue at most). Chunks stay in DRAM and
// readable meanwhile. Under a sustained put stream it writes every chunk once, in the
// order eviction will take them, which is the least work that keeps eviction free.
//
// Thread-safety: thread-safe; one background thread, joined by the destructor.
#pragma once

#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/dram/dram_allocator.h"
#include "storage/index.h"
#include "storage/nvme/demoter.h"
#include "storage/nvme/rocksdb_tier.h"

namespace kvstash::storage {

struct CleanerOptions {
  // Percentage of the DRAM budget kept clean at its cold end, 1..100. Larger: longer
  // bursts evict without waiting for a disk, but more chunks are written that a later
  // access would have kept in DRAM (written for nothing, if never evicted).
  int window_percent = 25;
  // Pause between passes when a pass found nothing to do and nobody kicked.
  int64_t idle_poll_ms = 20;
  // Pause before the next pass when the cleaner's share of the demotion queue was full.
  int64_t busy_poll_ms = 5;
  // Chunks that eviction would not write to NVMe are not cleaned either.
  NvmeAdmission admission;

  absl::Status Validate() const;
};

struct CleanerCounters {
  uint64_t passes = 0;  // scans of the cold end
  uint64_t queued = 0;  // chunks handed to the Demoter for cleaning
};

class Cleaner {
 public:
  // REQUIRES: every pointer outlives this; options.Validate() is OK.
  Cleaner(const CleanerOptions& options, const ChunkIndex* index, const DramAllocator* dram,
          Demoter* demoter, const RocksDbTier* nvme);
  ~Cleaner();
  Cleaner(const Cleaner&) = delete;
  Cleaner& operator=(const Cleaner&) = delete;

  // Asks for a pass now (e.g. a put had to evict).
  void Kick();
  CleanerCounters Counters() const;

 private:
  void Loop();
  struct PassResult {
    uint64_t queued = 0;      // chunks handed to the Demoter
    bool queue_full = false;  // stopped because the cleaner's share of the queue is used
  };
  // One scan of the cold end.
  PassResult Pass();
  bool Woken() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return kicked_ || stopping_; }

  const CleanerOptions options_;
  const ChunkIndex* const index_;
  const DramAllocator* const dram_;
  Demoter* const demoter_;
  const RocksDbTier* const nvme_;
  mutable absl::Mutex mu_;
  bool kicked_ ABSL_GUARDED_BY(mu_) = false;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;  // last pass found the queue full
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  CleanerCounters counters_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace kvstash::storage
