// Value types shared by the chunk store and the transports that serve it.
//
// Thread-safety: ChunkId, ChunkMeta and the stats structs are plain values. A ChunkRef may
// be copied and read from any thread; the bytes it points at never change while it lives.
// A PendingChunk is written by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kvstash/keys.h"

namespace kvstash::storage {

// Values match kvstash.v1.Tier on the wire.
enum class Tier : uint8_t { kNone = 0, kGpu = 1, kDram = 2, kNvme = 3 };

struct ChunkId {
  Key128 ns;   // namespace id
  Key128 key;  // chunk key within the namespace

  friend bool operator==(const ChunkId& a, const ChunkId& b) {
    return a.ns == b.ns && a.key == b.key;
  }
  template <typename H>
  friend H AbslHashValue(H h, const ChunkId& id) {
    return H::combine(std::move(h), id.ns, id.key);
  }
};

struct ChunkMeta {
  uint64_t size_bytes = 0;
  uint32_t tokens = 0;
  uint32_t format = 0;    // opaque writer tag
  // XXH3-64 of the payload; 0 on put = compute it. In a committed chunk's meta() it may
  // still be 0 while the checksum is computed in the background: read
  // StoredChunk::checksum() instead.
  uint64_t checksum = 0;
};

// A read-only piece of a stored chunk's payload.
struct Segment {
  const uint8_t* data;
  size_t size;
};
// A writable piece of a pending chunk's payload.
struct MutableSegment {
  uint8_t* data;
  size_t size;
};

// The bytes and metadata of a committed chunk. Implemented by each tier.
class StoredChunk {
 public:
  virtual ~StoredChunk() = default;
  virtual const ChunkMeta& meta() const = 0;
  // XXH3-64 of the payload. Computed now (once, on the calling thread) when the chunk was
  // committed without it and the background checksummer has not reached it yet.
  virtual uint64_t checksum() const { return meta().checksum; }
  // checksum() for a background thread: when it must be computed, the payload is hashed
  // `piece_bytes` at a time and the CPU yielded between pieces, so threads serving requests
  // on the same core are not held up for a whole chunk. Same value as checksum().
  virtual uint64_t BackgroundChecksum(size_t piece_bytes) const {
    (void)piece_bytes;
    return checksum();
  }
  // Payload in order; sizes add up to meta().size_bytes.
  virtual absl::Span<const Segment> segments() const = 0;
  // Copies the payload to `dst`. REQUIRES: dst holds meta().size_bytes bytes.
  void CopyTo(void* dst) const;
};

// Holding a ChunkRef keeps the chunk's memory allocated (a reader is never freed under).
using ChunkRef = std::shared_ptr<const StoredChunk>;

// A chunk being received. Dropping it without CommitPut releases its space, leaving no
// trace in the index.
class PendingChunk {
 public:
  virtual ~PendingChunk() = default;
  virtual const ChunkId& id() const = 0;
  virtual const ChunkMeta& meta() const = 0;
  // Copies `n` bytes after those already written. INVALID_ARGUMENT past meta().size_bytes.
  virtual absl::Status Append(const void* data, size_t n) = 0;
  virtual uint64_t bytes_written() const = 0;
  // Writable memory for transports that receive in place (UCX rendezvous). After filling
  // it call MarkWritten(meta().size_bytes) instead of Append.
  virtual absl::Span<const MutableSegment> segments() = 0;
  virtual void MarkWritten(uint64_t n) = 0;
};

struct CounterSnapshot {
  uint64_t chunks = 0;  // live chunks
  uint64_t bytes = 0;   // payload bytes of live chunks
  uint64_t hits = 0;    // gets served
  uint64_t misses = 0;  // gets of absent keys
  uint64_t puts = 0;    // chunks committed (idempotent repeats not counted)
  uint64_t evictions = 0;
  uint64_t deletes = 0;
  uint64_t lookups = 0;
  uint64_t lookup_hit_chunks = 0;
};

struct TierStats {
  Tier tier = Tier::kNone;
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;   // allocator bytes in use, slack included
  uint64_t chunk_bytes = 0;  // payload bytes of live chunks
  uint64_t chunks = 0;
};

// NVMe tier and DRAM<->NVMe movement since the store started; all zero when the NVMe tier
// is off. Hits and misses of the NVMe tier are also in CounterSnapshot (a get that DRAM
// missed and NVMe served counts once, as a hit).
struct NvmeCounters {
  uint64_t hits = 0;                // gets served from NVMe (or from the demotion queue)
  uint64_t misses = 0;              // gets that missed DRAM and NVMe
  uint64_t evictions = 0;           // chunks evicted from NVMe to stay within its budget
  uint64_t demotions = 0;           // DRAM evictions written to NVMe
  uint64_t cleanings = 0;           // DRAM chunks written to NVMe ahead of eviction
  uint64_t demotion_drops = 0;      // DRAM evictions dropped: queue full past demotion_wait_ms
  uint64_t demotion_failures = 0;   // demotions whose NVMe write failed (also in io_errors)
  uint64_t demotions_pending = 0;   // gauge: queued or being written now
  uint64_t promotions = 0;          // NVMe hits copied into DRAM
  uint64_t write_throughs = 0;      // puts also written to NVMe at commit
  uint64_t checksum_failures = 0;   // NVMe reads that failed verification (chunk deleted)
  uint64_t io_errors = 0;           // failed NVMe reads, writes, deletes, compactions
  uint64_t recovered_chunks = 0;    // chunks found on NVMe at start-up
  uint64_t reopens = 0;             // NVMe database reopened after a write error
  uint64_t gc_runs = 0;             // blob garbage-collection runs
  uint64_t gc_waits = 0;            // NVMe writes that waited for GC near the budget
  bool writes_suspended = false;    // gauge: NVMe writing stopped after an error
};

struct StoreStats {
  CounterSnapshot total;
  std::vector<TierStats> tiers;  // DRAM first, then NVMe when enabled
  NvmeCounters nvme;
};

}  // namespace kvstash::storage
