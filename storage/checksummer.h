// Checksummer: computes, on its own thread, the XXH3-64 of DRAM chunks that were committed
// without one. UCX rendezvous puts land in the arena by a transport copy the daemon cannot
// hash along the way; hashing them before the reply would add a second full pass over the
// payload to every put's latency (on the build hosts ~40% of the daemon's CPU per put).
// Instead the chunk is sealed with a deferred checksum and queued here, so the hash runs
// on another core while the next transfer is under way. A reader that needs the checksum
// before this thread got to it (a Get reply, a demotion) computes it itself; either way it
// is computed exactly once (DramChunk::checksum).
//
// The queue holds chunk ids, resolved when their turn comes through `lookup` (the index's
// Peek, which copies the reference under the index's shard lock: eviction relies on every
// reference being taken there). A chunk evicted or deleted before its turn is skipped and
// nothing keeps its memory. When the queue is full, Enqueue drops the request; the checksum
// is then computed by the first reader.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/chunk.h"

namespace kvstash::storage {

class Checksummer {
 public:
  struct Options {
    // Chunks waiting to be hashed; beyond it requests are dropped (hashed on first read).
    size_t queue_chunks = 1024;
    // Bytes hashed between two sched_yield() calls (StoredChunk::BackgroundChecksum), so a
    // request's thread woken on this core waits for one piece, not a whole chunk. 0: whole
    // chunks.
    size_t yield_every_bytes = 256 << 10;
  };

  // `lookup` returns the committed chunk of an id, or null; called on this thread only.
  Checksummer(const Options& options, std::function<ChunkRef(const ChunkId&)> lookup);
  // Stops the thread; queued chunks stay unhashed (their readers hash them).
  ~Checksummer();
  Checksummer(const Checksummer&) = delete;
  Checksummer& operator=(const Checksummer&) = delete;

  // Queues the chunk committed as `id` to have checksum() computed. Never blocks on hashing.
  void Enqueue(const ChunkId& id) ABSL_LOCKS_EXCLUDED(mu_);
  // Requests dropped because the queue was full.
  uint64_t dropped() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  const std::function<ChunkRef(const ChunkId&)> lookup_;
  mutable absl::Mutex mu_;
  std::deque<ChunkId> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the members above exist
};

}  // namespace kvstash::storage
