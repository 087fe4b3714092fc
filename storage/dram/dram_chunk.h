// DRAM-tier implementations of StoredChunk (a committed chunk) and PendingChunk (a chunk
// being received). Both own an Allocation and give it back to the DramAllocator when
// destroyed; they share ownership of the allocator so the arena outlives every reader, even
// one that outlives the store.
//
// Thread-safety: DramChunk is immutable (its deferred checksum is computed once, under
// std::call_once) and safe to read from any thread. DramPendingChunk is used by one thread
// at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "common/xxh3_dispatch.h"
#include "kvstash/hints.h"
#include "storage/chunk.h"
#include "storage/dram/dram_allocator.h"

namespace kvstash::storage {

// XXH3-64 of the bytes of `segments` in order. With `piece_bytes` > 0 it hashes that many
// bytes at a time and calls sched_yield() between pieces; the value is the same.
uint64_t HashSegments(absl::Span<const Segment> segments, size_t piece_bytes = 0);

class DramChunk final : public StoredChunk {
 public:
  // With `deferred_checksum` meta.checksum is ignored (reads as 0 in meta()) and
  // checksum() hashes the payload on first use.
  DramChunk(const ChunkMeta& meta, Allocation allocation, std::shared_ptr<DramAllocator> allocator,
            bool deferred_checksum = false);
  ~DramChunk() override;

  const ChunkMeta& meta() const override { return meta_; }
  uint64_t checksum() const override;
  uint64_t BackgroundChecksum(size_t piece_bytes) const override;
  absl::Span<const Segment> segments() const override { return allocation_.segments; }
  // Whether checksum() would return without hashing.
  bool checksum_known() const { return !deferred_ || known_.load(std::memory_order_acquire); }

 private:
  // Records the deferred checksum; called inside once_.
  void Publish(uint64_t hash) const;

  const ChunkMeta meta_;
  Allocation allocation_;
  const std::shared_ptr<DramAllocator> allocator_;
  const bool deferred_;
  // std::call_once rather than absl::call_once: a caller that waits for another's hash
  // waits in pthread_once, which ThreadSanitizer sees, not in abseil's spin loop.
  mutable std::once_flag once_;
  mutable uint64_t deferred_checksum_ = 0;  // written once, inside once_ (Publish)
  mutable std::atomic<bool> known_{false};
};

class DramPendingChunk final : public PendingChunk {
 public:
  // REQUIRES: allocation holds meta.size_bytes bytes.
  DramPendingChunk(const ChunkId& id, const ChunkMeta& meta, Allocation allocation,
                   std::shared_ptr<DramAllocator> allocator);
  ~DramPendingChunk() override;

  const ChunkId& id() const override { return id_; }
  const ChunkMeta& meta() const override { return meta_; }
  absl::Status Append(const void* data, size_t n) override;
  uint64_t bytes_written() const override { return written_; }
  absl::Span<const MutableSegment> segments() override;
  // Records that `n` more bytes were written in place (through segments()) after those
  // already written. Mixing with Append is allowed; the checksum is then computed over the
  // whole payload at commit. Overrunning the size makes Seal fail.
  void MarkWritten(uint64_t n) override;

  // Checks that every byte arrived and the checksum, then turns this into a committed
  // chunk whose meta carries the computed checksum. On error this object is unchanged
  // (dropping it frees the space). Errors: INVALID_ARGUMENT, DATA_LOSS.
  // With `defer_checksum`, a chunk received in place (MarkWritten) whose put named no
  // checksum is sealed without hashing it: the committed DramChunk computes it on first
  // use (see Checksummer). A checksum named by the put is always verified here.
  absl::StatusOr<ChunkRef> Seal(bool defer_checksum = false);
  // Whether this chunk's space came from `allocator` (i.e. from this store).
  bool IsFrom(const DramAllocator& allocator) const { return allocator_.get() == &allocator; }
  // The put's hints, carried from BeginPut to CommitPut.
  const PutHints& hints() const { return hints_; }
  void set_hints(const PutHints& hints) { hints_ = hints; }

 private:
  // Moves the write cursor `n` bytes on, calling copy(dst, offset_in_input, len) per piece.
  template <typename CopyFn>
  void Advance(uint64_t n, CopyFn copy);
  uint64_t PayloadChecksum();

  const ChunkId id_;
  const ChunkMeta meta_;
  Allocation allocation_;
  std::shared_ptr<DramAllocator> allocator_;
  PutHints hints_;
  absl::InlinedVector<MutableSegment, 4> mutable_segments_;  // built on first segments()
  uint64_t written_ = 0;
  size_t cursor_segment_ = 0;  // where the next byte goes
  uint64_t cursor_offset_ = 0;
  bool overrun_ = false;      // MarkWritten went past the size
  bool hash_is_live_ = true;  // every byte so far went through Append (and hash_)
  XXH3_state_t hash_;
};

}  // namespace kvstash::storage
