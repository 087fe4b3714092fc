// ParallelCopier: shares one large copy, or a batch of copies, between the calling thread
// and helper threads.
//
// One core copying a few MiB out of DRAM is bound by the cache misses it can keep in
// flight, not by the memory system: on the build host a 4 MiB copy from DRAM into a
// cached buffer took ~520 us on one thread and ~256 us split over two. Direct-access gets
// and puts of a same-host client (UcxChannel) copy whole chunks on the caller's thread, so
// the helpers take a share of each large one.
//
// A batch of chunks each below the threshold (a get of 128 KiB pages) is shared the same
// way when the batch is large enough: the pieces run across the chunks' boundaries.
//
// A copy is cut into pieces claimed from a shared cursor: the caller copies from the first
// piece on and never waits for a helper to wake (a wake-up can take longer than the copy
// on a busy host); a helper that wakes late finds less or nothing left. Helpers start with
// the first copy large enough for them and sleep between copies.
//
// Thread-safety: thread-safe. One CopyAll at a time uses the helpers; one that finds them
// busy copies on its own thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace kvstash::client_internal {

class ParallelCopier {
 public:
  struct Options {
    // Helper threads; 0: every copy runs on the caller alone.
    int helpers = 1;
    // Copies (for CopyAll, batches) smaller than this run on the caller alone (waking a
    // helper costs more).
    size_t min_bytes = size_t{1} << 20;
    // Bytes claimed at a time.
    size_t piece_bytes = size_t{256} << 10;
  };

  // One copy of a batch.
  struct Range {
    void* dst = nullptr;
    const void* src = nullptr;
    size_t n = 0;
  };

  explicit ParallelCopier(const Options& options);
  ~ParallelCopier();
  ParallelCopier(const ParallelCopier&) = delete;
  ParallelCopier& operator=(const ParallelCopier&) = delete;

  // Copies every range of `ranges` (none overlapping another); with `streaming`, by
  // StreamingCopy's non-temporal stores, fenced before it returns. The helpers join when
  // the ranges' bytes add up to `min_bytes`. Returns when every byte is copied; nothing of
  // the copy runs after that.
  void CopyAll(absl::Span<const Range> ranges, bool streaming);

 private:
  struct Job {
    absl::Span<const Range> ranges;
    const size_t* ends;  // ends[i]: the bytes of ranges [0, i]
    size_t n;            // the bytes of every range
    bool streaming;
    std::atomic<size_t> next{0};     // first byte not yet claimed
    std::atomic<int> helpers_in{0};  // helpers that took the job and may still copy
  };

  void HelperLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Claims and copies pieces of `job` until none is left.
  void RunPieces(Job& job) const;
  // Copies bytes [at, end) of the job's ranges, taken end to end.
  static void CopySpan(const Job& job, size_t at, size_t end);

  const Options options_;
  absl::Mutex busy_;  // held by the copy that uses the helpers (TryLock)
  absl::Mutex mu_;
  Job* job_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // one per published job
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::once_flag started_;
  std::vector<std::thread> helpers_;  // started by the first copy that uses them
};

}  // namespace kvstash::client_internal
