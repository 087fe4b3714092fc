// RocksDbTier: the NVMe tier. Chunk payloads live in RocksDB's integrated BlobDB (one blob
// file record per payload), metadata in a column family of its own, and an in-memory index
// of every chunk (rebuilt at Open by scanning the metadata family only) answers presence
// questions and orders approximate-LRU eviction under a byte budget. On-disk layout:
// docs/storage-format.md.
//
// Every read verifies the payload's XXH3-64 against the metadata; a mismatch (or RocksDB
// reporting corruption) deletes the chunk, counts it and reads as NOT_FOUND, so corrupt
// bytes are never handed out.
//
// Durability: a Put is written to the WAL before it returns. With sync_writes the WAL is
// fsynced first, so an acknowledged Put survives kill -9 and power loss; without it, it
// survives kill -9 of the process (the bytes are in the page cache) but not a power loss or
// kernel crash. Deletes and evictions follow the same rule.
//
// Thread-safety: thread-safe. Writes and deletes of one key are serialised by a striped
// lock; reads take only the index mutex briefly and run their I/O without locks.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/chunk.h"
#include "storage/eviction_policy.h"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class Status;
class WriteBatch;
struct WriteOptions;
}  // namespace rocksdb

namespace kvstash::storage {

struct RocksDbTierOptions {
  // Directory of the database; created if missing. An existing database is reopened and
  // its index rebuilt from the metadata family.
  std::string path;
  // Byte budget of live chunk payloads. Puts evict approximately-least-recently-used
  // chunks to stay within it; blob garbage collection keeps the directory within ~1.25x.
  // Budgets below 16 MiB work but the fixed files (WAL, MANIFEST, LOG) weigh more.
  uint64_t capacity_bytes = 64ull << 30;
  // fsync the WAL before a write returns. Off: acknowledged writes survive kill -9 but not
  // power loss; on: they survive both, at the cost of one fsync per chunk.
  bool sync_writes = false;

  // Names the offending field ("nvme.<field>" via ChunkStoreOptions).
  absl::Status Validate() const;
};

// Counters of the tier since Open (the index contents are in Stats()).
struct RocksDbTierCounters {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t puts = 0;
  uint64_t deletes = 0;
  uint64_t evictions = 0;          // chunks removed to stay within the budget
  uint64_t checksum_failures = 0;  // reads whose payload failed verification (then deleted)
  uint64_t io_errors = 0;          // failed RocksDB reads/writes/deletes
  uint64_t gc_runs = 0;            // blob garbage-collection compactions
  uint64_t recovered_chunks = 0;   // chunks indexed by Open from an existing database
  uint64_t dropped_records = 0;    // unreadable metadata records deleted by Open
};

class RocksDbTier {
 public:
  // Opens (or creates) the database at options.path and rebuilds the index.
  static absl::StatusOr<std::unique_ptr<RocksDbTier>> Open(const RocksDbTierOptions& options);
  // Stops garbage collection and closes the database; unflushed writes stay in the WAL.
  ~RocksDbTier();
  RocksDbTier(const RocksDbTier&) = delete;
  RocksDbTier& operator=(const RocksDbTier&) = delete;

  // Stores `chunk` under `id`, evicting older chunks first if the budget needs it. OK
  // without writing when `id` is present. REQUIRES: chunk.meta().checksum is the payload's
  // XXH3-64 (committed chunks carry it). Errors: RESOURCE_EXHAUSTED (larger than the
  // budget), UNAVAILABLE (RocksDB write failed: disk full, I/O error).
  absl::Status Put(const ChunkId& id, const StoredChunk& chunk);
  // The verified chunk in heap memory, or NOT_FOUND (absent, failed verification, or an
  // I/O error; the latter two are counted).
  absl::StatusOr<ChunkRef> Get(const ChunkId& id);
  bool Contains(const ChunkId& id) const;
  // OK or NOT_FOUND.
  absl::Status Delete(const ChunkId& id);

  TierStats Stats() const;
  RocksDbTierCounters Counters() const;
  const RocksDbTierOptions& options() const { return options_; }

  // Flushes memtables, so payloads sit in blob files (tests corrupt them there).
  absl::Status Flush();
  // Runs one blob garbage-collection compaction now (normally triggered by deletes).
  absl::Status CollectGarbage();

 private:
  struct Entry : PolicyHook {  // stamp = persisted sequence, prev/next = LRU links
    ChunkId id;
    ChunkMeta meta;
    uint64_t generation = 0;  // unique per insert: a delete aimed at an older one is void
  };
  static constexpr int kStripes = 64;

  RocksDbTier(const RocksDbTierOptions& options, std::unique_ptr<rocksdb::DB> db,
              std::vector<rocksdb::ColumnFamilyHandle*> families);
  absl::Status LoadIndex();
  absl::Mutex& StripeFor(const ChunkId& id) const;
  // Evicts LRU chunks until `size` more bytes fit (or nothing is left to evict).
  void MakeRoom(uint64_t size);
  absl::Status WriteChunk(const ChunkId& id, const StoredChunk& chunk, uint64_t sequence);
  // Removes `id` from index and disk if its generation is `generation` (0: any).
  bool Remove(const ChunkId& id, uint64_t generation);
  // Moves a hit to the LRU front; now and then persists its sequence for restarts.
  void Touch(const ChunkId& id, uint64_t generation);
  void InsertLocked(std::unique_ptr<Entry> entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EraseLocked(Entry* entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts an I/O error and, at most once a second, asks RocksDB to leave the read-only
  // state a background error (e.g. disk full) put it in.
  absl::Status IoError(const char* what, const std::string& detail);
  // Every write of the tier goes through here. RocksDB 7.8 may append to a WAL whose last
  // write failed and then abort on one of its own assertions, so after the first failed
  // write the tier stops writing (reads, including verification, go on) until the daemon
  // restarts; io_errors counts every refused write.
  rocksdb::Status GuardedWrite(const rocksdb::WriteOptions& options, rocksdb::WriteBatch* batch);
  bool writes_suspended() const { return writes_suspended_.load(std::memory_order_acquire); }
  bool GcWanted() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return stopping_ || garbage_bytes_ >= gc_trigger_bytes_;
  }
  void GcLoop();

  const RocksDbTierOptions options_;
  std::unique_ptr<rocksdb::DB> db_;
  // [default, payload, meta]; owned here, destroyed before db_.
  std::vector<rocksdb::ColumnFamilyHandle*> families_;
  mutable std::array<absl::Mutex, kStripes> stripes_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<ChunkId, std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  HookList lru_ ABSL_GUARDED_BY(mu_);  // front = most recent
  uint64_t live_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // puts under way
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;
  RocksDbTierCounters counters_ ABSL_GUARDED_BY(mu_);
  // Serialises GuardedWrite so no write starts after one has failed.
  absl::Mutex write_mu_;
  std::atomic<bool> writes_suspended_{false};

  // Payload bytes deleted since the last GC; GcLoop compacts when it passes a threshold.
  uint64_t garbage_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  const uint64_t gc_trigger_bytes_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex gc_mu_;  // serialises CollectGarbage callers
  std::thread gc_thread_;
};

}  // namespace kvstash::storage
