// Value types shared by the chunk store and the transports that serve it.
//
// Thread-safety: ChunkId, ChunkMeta and the stats structs are plain values. A ChunkRef may
// be copied and read from any thread; the bytes it points at never change while it lives.
// A PendingChunk is written by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kvstash/keys.h"
#include "kvstash/stats_counters.h"

namespace kvstash::storage {

// Values match kvstash.v1.Tier on the wire.
enum class Tier : uint8_t { kNone = 0, kGpu = 1, kDram = 2, kNvme = 3 };

struct ChunkId {
  Key128 ns;   // namespace id
  Key128 key;  // chunk key within the namespace

  // Four word compares, inlined: the index compares ids on every probe.
  friend bool operator==(const ChunkId& a, const ChunkId& b) {
    uint64_t x[4], y[4];
    std::memcpy(x, &a, sizeof(x));
    std::memcpy(y, &b, sizeof(y));
    return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) == 0;
  }
  template <typename H>
  friend H AbslHashValue(H h, const ChunkId& id) {
    return H::combine(std::move(h), id.ns, id.key);
  }
};
static_assert(sizeof(ChunkId) == 32, "ChunkId compares as four words");

struct ChunkMeta {
  uint64_t size_bytes = 0;
  uint32_t tokens = 0;
  uint32_t format = 0;  // opaque writer tag
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

// Field declarations expanded from kvstash/stats_counters.h.
#define KVSTASH_STAT_MEMBER(name, ...) uint64_t name = 0;

// A namespace's counters, or the daemon's totals (KVSTASH_STORE_COUNTERS).
struct CounterSnapshot {
  KVSTASH_STORE_COUNTERS(KVSTASH_STAT_MEMBER)
};

// One tier's occupancy (KVSTASH_TIER_STATS).
struct TierStats {
  Tier tier = Tier::kNone;
  KVSTASH_TIER_STATS(KVSTASH_STAT_MEMBER)
};

// NVMe tier and DRAM<->NVMe movement since the store started (KVSTASH_NVME_COUNTERS); all
// zero when the NVMe tier is off. Hits and misses of the NVMe tier are also in
// CounterSnapshot (a get that DRAM missed and NVMe served counts once, as a hit).
struct NvmeCounters {
  KVSTASH_NVME_COUNTERS(KVSTASH_STAT_MEMBER)
};

#undef KVSTASH_STAT_MEMBER

struct StoreStats {
  CounterSnapshot total;
  std::vector<TierStats> tiers;  // DRAM first, then NVMe when enabled
  NvmeCounters nvme;
};

// One tier's share of a namespace.
struct TierUsage {
  Tier tier = Tier::kNone;
  uint64_t chunks = 0;
  uint64_t bytes = 0;
};

// One namespace's footprint per tier (admin listing).
struct NamespaceUsage {
  Key128 ns;
  std::string tenant;  // as bound by SetNamespaceTenant; empty when never bound
  // One entry per tier holding chunks of the namespace, fastest first.
  std::vector<TierUsage> tiers;
  uint64_t pinned_bytes = 0;

  // Its share of `tier`: zeros when the tier holds none of it.
  TierUsage Of(Tier tier) const;
  // Its chunks in every tier.
  uint64_t Chunks() const;
};

}  // namespace kvstash::storage
