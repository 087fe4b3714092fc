// RocksDbTier: the NVMe tier. Chunk payloads live in RocksDB's integrated BlobDB (one blob
// file record per payload), metadata in a column family of its own, and an in-memory index
// of every chunk (rebuilt at Open by scanning the metadata family only) answers presence
// questions and orders eviction under a byte budget through an EvictionPolicy
// (RocksDbTierOptions::eviction). Recency survives restarts approximately: each chunk's
// metadata holds the sequence of its write or of a read now and then, and Open hands the
// chunks to the policy oldest first. On-disk layout: docs/storage-format.md.
//
// Every read verifies the payload's XXH3-64 against the metadata; a mismatch (or RocksDB
// reporting corruption) deletes the chunk, counts it and reads as NOT_FOUND, so corrupt
// bytes are never handed out.
//
// Durability depends on the put's WriteMode. kLogged: the chunk is in the WAL before Put
// returns; with sync_writes the WAL is fsynced first, so it survives kill -9 and power
// loss; without, it survives kill -9 (the bytes are in the page cache) but not a power loss
// or kernel crash. kDeferred (write-back demotion): no WAL, so the payload is written to
// disk once (at flush, into a blob file) instead of twice; the chunk becomes durable when
// its memtable is flushed: when the memtable fills, at most flush_interval_ms after the
// put, and at a clean close. payload and meta flush atomically (atomic_flush), so after a
// crash a chunk has both entries or neither. Deletes are always logged.
//
// Write errors: the first failed RocksDB write suspends writing (RocksDB 7.8 may abort on
// an assertion when a write follows a failed WAL write). The maintenance thread then
// reopens the database once the filesystem has the free-space floor again, reloads the
// index from the metadata family and resumes writing; reads go on throughout except for
// the moment of the reopen (they wait for it).
//
// Thread-safety: thread-safe. Writes and deletes of one key are serialised by a striped
// lock; reads take the index mutex briefly and the database lock shared (exclusive only
// while reopening), and run their I/O without other locks.
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
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/chunk.h"
#include "storage/nvme/rocksdb_tier_options.h"
#include "storage/policy/eviction_policy.h"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class Status;
class WriteBatch;
struct WriteOptions;
}  // namespace rocksdb

namespace kvstash::storage {

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
  uint64_t gc_waits = 0;           // writes that waited for GC near the budget
  uint64_t recovered_chunks = 0;   // chunks indexed by Open from an existing database
  uint64_t dropped_records = 0;    // unreadable metadata records deleted by Open
  uint64_t reopens = 0;            // reopens after a failed write (writing resumed)
  bool writes_suspended = false;   // gauge: writing stopped after an error, reopen pending
};

// How a Put reaches the disk (see the class comment).
enum class WriteMode {
  kLogged,    // WAL (fsynced with sync_writes): durable when Put returns
  kDeferred,  // no WAL: durable at the next flush (memtable full, flush_interval_ms, close)
};

class RocksDbTier {
 public:
  // Opens (or creates) the database at options.path and rebuilds the index.
  static absl::StatusOr<std::unique_ptr<RocksDbTier>> Open(const RocksDbTierOptions& options);
  // Stops the maintenance thread, flushes kDeferred writes and closes the database.
  ~RocksDbTier();
  RocksDbTier(const RocksDbTier&) = delete;
  RocksDbTier& operator=(const RocksDbTier&) = delete;

  // Stores `chunk` under `id`, evicting older chunks first if the budget needs it. OK
  // without writing when `id` is present. The stored checksum is chunk.checksum(). Errors:
  // RESOURCE_EXHAUSTED (larger than the budget), UNAVAILABLE (RocksDB write failed or writing
  // suspended: disk full, I/O error).
  absl::Status Put(const ChunkId& id, const StoredChunk& chunk,
                   WriteMode mode = WriteMode::kLogged);
  // The verified chunk in heap memory, or NOT_FOUND (absent, failed verification, or an
  // I/O error; the latter two are counted).
  absl::StatusOr<ChunkRef> Get(const ChunkId& id);
  bool Contains(const ChunkId& id) const;
  // OK or NOT_FOUND.
  absl::Status Delete(const ChunkId& id);
  // Removes the chunks that `match` accepts, coldest first by the configured policy
  // (RocksDbTierOptions::eviction), until `max_bytes` of payload are gone (UINT64_MAX:
  // every match), counted as evictions (a tenant over its quota) or, with `as_deletes`, as
  // deletes (a namespace cleared). Returns the chunks removed. Costs a walk of the policy's
  // order up to the last chunk taken.
  uint64_t RemoveColdest(absl::FunctionRef<bool(const ChunkId&)> match, uint64_t max_bytes,
                         bool as_deletes);
  // Live chunks and payload bytes of each namespace on the tier.
  struct NamespaceUsage {
    uint64_t chunks = 0;
    uint64_t bytes = 0;
  };
  absl::flat_hash_map<Key128, NamespaceUsage> NamespaceUsages() const;

  TierStats Stats() const;
  RocksDbTierCounters Counters() const;
  const RocksDbTierOptions& options() const { return options_; }

  // Flushes memtables, so payloads sit in blob files (tests corrupt them there).
  absl::Status Flush();
  // Runs one blob garbage-collection compaction now (normally triggered by deletes).
  absl::Status CollectGarbage();
  // Whether writing is suspended after a failed write (until the reopen succeeds).
  bool writes_suspended() const { return writes_suspended_.load(std::memory_order_acquire); }

 private:
  struct Entry : PolicyHook {  // the hook belongs to policy_
    ChunkId id;
    uint64_t sequence = 0;  // persisted with the metadata: recency across restarts
    ChunkMeta meta;
    uint64_t generation = 0;  // unique per insert: a delete aimed at an older one is void
  };
  static constexpr int kStripes = 64;

  using Families = std::vector<rocksdb::ColumnFamilyHandle*>;
  RocksDbTier(const RocksDbTierOptions& options, std::unique_ptr<rocksdb::DB> db,
              Families families);
  // Opens the database at options.path (rocksdb_tier_maintenance.cc).
  static absl::Status OpenDb(const RocksDbTierOptions& options, std::unique_ptr<rocksdb::DB>* db,
                             Families* families);
  // Scans the metadata family, oldest sequence first; the keys of unreadable records go to
  // `drop` (deleted by the caller rather than trusted).
  absl::Status ScanIndex(std::vector<std::unique_ptr<Entry>>* loaded,
                         std::vector<std::string>* drop) ABSL_SHARED_LOCKS_REQUIRED(db_mu_);
  absl::Status LoadIndex();
  // Replaces the whole index by `loaded` (sorted oldest first), ordered by `policy`, a
  // fresh instance (MakePolicy).
  void InstallIndexLocked(std::vector<std::unique_ptr<Entry>> loaded, EvictionPolicyPtr policy)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes the records of `keys` from both families.
  void DropRecords(const std::vector<std::string>& keys);
  // Closes the database (handles first). REQUIRES: no other thread uses it.
  void CloseDbLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_mu_);
  absl::Mutex& StripeFor(const ChunkId& id) const;
  // Evicts the policy's victims until `size` more bytes fit (or nothing is left to evict).
  void MakeRoom(uint64_t size);
  // Writes chunk's payload with `stored` (its meta, real checksum) as metadata.
  absl::Status WriteChunk(const ChunkId& id, const StoredChunk& chunk, const ChunkMeta& stored,
                          uint64_t sequence, WriteMode mode);
  // Removes `id` from index and disk if its generation is `generation` (0: any).
  bool Remove(const ChunkId& id, uint64_t generation);
  // Tells the policy of a hit; now and then persists its sequence for restarts.
  void Touch(const ChunkId& id, uint64_t generation);
  void InsertLocked(std::unique_ptr<Entry> entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A fresh instance of the configured policy (options_.eviction); an unknown name is an
  // error, never a silent fallback.
  absl::StatusOr<EvictionPolicyPtr> MakePolicy() const;
  void EraseLocked(Entry* entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts an I/O error; returns it as UNAVAILABLE.
  absl::Status IoError(const char* what, const std::string& detail);
  // Every write of the tier goes through here. RocksDB 7.8 may append to a WAL whose last
  // write failed and then abort on one of its own assertions, so after the first failed
  // write the tier stops writing (reads, including verification, go on) until
  // MaybeRecover has reopened the database; io_errors counts every refused write.
  // `fill` builds the batch (`reserve_bytes` preallocated) from the current column family
  // handles.
  using BatchFill = absl::FunctionRef<rocksdb::Status(const Families&, rocksdb::WriteBatch*)>;
  rocksdb::Status GuardedWrite(WriteMode mode, size_t reserve_bytes, BatchFill fill);
  // Whether the filesystem holding the database has at least MinFreeBytes free.
  bool HasFreeSpaceFloor() const;

  // Maintenance (rocksdb_tier_maintenance.cc): one thread runs blob garbage collection,
  // the periodic flush of kDeferred writes and the reopen after a failed write.
  bool MaintenanceWanted() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    // No collection while writing is suspended (it would write blob files): MaybeRecover
    // runs on the timer meanwhile.
    const bool gc = garbage_bytes_ >= gc_trigger_bytes_ || (gc_wanted_ && garbage_bytes_ > 0);
    return stopping_ || (gc && !writes_suspended());
  }
  // Holds a write (its bytes already reserved), at most kGarbageWaitMax, while live and
  // reserved bytes plus garbage not yet collected pass kDiskCeilingPercent of the budget
  // and a GC run can still reclaim some of it: demotion then goes at the pace garbage
  // collection frees space, so disk use stays near the budget under churn.
  void WaitForCollectedGarbage();
  bool OverDiskCeilingLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void MaintenanceLoop();
  // Flushes when kDeferred writes have waited flush_interval_ms.
  void MaybeFlushDeferred();
  // When writing is suspended and the free-space floor is back: reopens and reloads.
  void MaybeRecover();
  absl::Status Reopen();

  const RocksDbTierOptions options_;
  // Shared by every use of db_ and families_; exclusive only while Reopen swaps them. db_
  // is null when a reopen failed (every operation then fails or misses until one works).
  mutable absl::Mutex db_mu_ ABSL_ACQUIRED_AFTER(write_mu_);
  std::unique_ptr<rocksdb::DB> db_ ABSL_GUARDED_BY(db_mu_);
  // [default, payload, meta]; owned here, destroyed before db_.
  Families families_ ABSL_GUARDED_BY(db_mu_);
  mutable std::array<absl::Mutex, kStripes> stripes_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<ChunkId, std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  EvictionPolicyPtr policy_ ABSL_GUARDED_BY(mu_);  // orders every entry of entries_
  uint64_t live_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<Key128, NamespaceUsage> ns_usage_ ABSL_GUARDED_BY(mu_);
  uint64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // puts under way
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t next_generation_ ABSL_GUARDED_BY(mu_) = 1;
  RocksDbTierCounters counters_ ABSL_GUARDED_BY(mu_);
  // Serialises GuardedWrite so no write starts after one has failed.
  absl::Mutex write_mu_;
  std::atomic<bool> writes_suspended_{false};
  // Steady-clock ms of the oldest kDeferred write not yet flushed; 0 when none.
  std::atomic<int64_t> deferred_since_ms_{0};
  absl::Time last_recovery_attempt_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();

  // Payload bytes deleted since the last GC started; the maintenance thread collects when
  // it passes a threshold, or sooner when gc_wanted_ (a write waits on garbage).
  uint64_t garbage_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Payload bytes deleted and not yet covered by a finished GC run: roughly the dead bytes
  // still on disk.
  uint64_t uncollected_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool gc_wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool gc_running_ ABSL_GUARDED_BY(mu_) = false;
  const uint64_t gc_trigger_bytes_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex gc_mu_;  // serialises CollectGarbage callers
  std::thread maintenance_thread_;
};

}  // namespace kvstash::storage
