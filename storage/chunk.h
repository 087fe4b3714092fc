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
  uint64_t checksum = 0;  // XXH3-64 of the payload; 0 on put = compute it
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

struct StoreStats {
  CounterSnapshot total;
  std::vector<TierStats> tiers;
};

}  // namespace kvstash::storage
