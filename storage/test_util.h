// Helpers shared by the storage tests: keys, payload patterns derived from a key, and
// a one-call put. Test-only; no production target includes this header.
//
// Thread-safety: functions are pure or touch only their arguments.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "storage/chunk.h"
#include "storage/chunk_store.h"

namespace kvstash::storage::testing {

inline Key128 MakeKey(uint64_t n, uint64_t salt = 0) {
  Key128 k{};
  const uint64_t a = n * 0x9E3779B97F4A7C15ull + salt;
  const uint64_t b = (n ^ 0xA5A5A5A5A5A5A5A5ull) * 0xC2B2AE3D27D4EB4Full + salt;
  std::memcpy(k.data(), &a, 8);
  std::memcpy(k.data() + 8, &b, 8);
  return k;
}

inline ChunkId MakeId(uint64_t n, uint64_t ns = 1) { return {MakeKey(ns, 77), MakeKey(n)}; }

// Byte i of the payload of a chunk whose pattern seed is `seed`.
inline uint8_t PatternByte(uint64_t seed, uint64_t i) {
  uint64_t x = (seed + i / 8) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return static_cast<uint8_t>(x >> (8 * (i % 8)));
}

inline std::vector<uint8_t> Pattern(uint64_t seed, uint64_t size) {
  std::vector<uint8_t> out(size);
  for (uint64_t i = 0; i < size; ++i) out[i] = PatternByte(seed, i);
  return out;
}

inline uint64_t Checksum(const std::vector<uint8_t>& data) {
  return XXH3_64bits(data.data(), data.size());
}

// True when `chunk` holds exactly Pattern(seed, expected_size).
inline bool HasPattern(const StoredChunk& chunk, uint64_t seed, uint64_t expected_size) {
  if (chunk.meta().size_bytes != expected_size) return false;
  uint64_t i = 0;
  for (const Segment& s : chunk.segments()) {
    for (size_t j = 0; j < s.size; ++j, ++i) {
      if (s.data[j] != PatternByte(seed, i)) return false;
    }
  }
  return i == expected_size;
}

// BeginPut + Append (in pieces of `piece` bytes) + CommitPut.
inline absl::Status PutBytes(ChunkStore& store, const ChunkId& id, const std::vector<uint8_t>& data,
                             uint64_t checksum = 0, size_t piece = 100000) {
  ChunkMeta meta;
  meta.size_bytes = data.size();
  meta.tokens = 16;
  meta.format = 7;
  meta.checksum = checksum;
  auto pending = store.BeginPut(id, meta);
  if (!pending.ok()) return pending.status();
  for (size_t off = 0; off < data.size(); off += piece) {
    const size_t n = std::min(piece, data.size() - off);
    if (absl::Status s = (*pending)->Append(data.data() + off, n); !s.ok()) return s;
  }
  return store.CommitPut(*std::move(pending));
}

inline absl::Status PutPattern(ChunkStore& store, const ChunkId& id, uint64_t seed, uint64_t size) {
  return PutBytes(store, id, Pattern(seed, size));
}

// BeginPut + a fill through segments() + MarkWritten + CommitPut, as UCX rendezvous does.
inline absl::Status PutInPlace(ChunkStore& store, const ChunkId& id,
                               const std::vector<uint8_t>& data, uint64_t checksum = 0) {
  ChunkMeta meta;
  meta.size_bytes = data.size();
  meta.checksum = checksum;
  auto pending = store.BeginPut(id, meta);
  if (!pending.ok()) return pending.status();
  uint64_t offset = 0;
  for (const MutableSegment& s : (*pending)->segments()) {
    std::memcpy(s.data, data.data() + offset, s.size);
    offset += s.size;
  }
  (*pending)->MarkWritten(offset);
  return store.CommitPut(*std::move(pending));
}

}  // namespace kvstash::storage::testing
