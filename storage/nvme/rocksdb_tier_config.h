// The RocksDB options of the NVMe tier, derived from RocksDbTierOptions. Every option set
// is explained where it is set (rocksdb_tier_config.cc); anything not mentioned there is a
// RocksDB 7.8 default on purpose.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "absl/time/time.h"
#include "rocksdb/options.h"
#include "storage/nvme/rocksdb_tier_options.h"

namespace kvstash::storage::nvme {

// Positions of the column families in RocksDbTier's handle vector.
enum Family { kDefault = 0, kPayload = 1, kMeta = 2 };

struct DbConfig {
  rocksdb::DBOptions db;
  rocksdb::ColumnFamilyOptions payload;  // chunk bytes, in blob files
  rocksdb::ColumnFamilyOptions meta;     // small fixed-size records, scanned at start-up
};

DbConfig BuildDbConfig(const RocksDbTierOptions& options);
// WriteMode::kLogged: WAL on, fsynced with sync_writes.
rocksdb::WriteOptions ChunkWriteOptions(const RocksDbTierOptions& options);
// WriteMode::kDeferred: no WAL; durable once flushed.
rocksdb::WriteOptions DeferredWriteOptions();
rocksdb::ReadOptions PayloadReadOptions();
// Deleted payload bytes after which a blob garbage-collection compaction runs.
uint64_t GcTriggerBytes(const RocksDbTierOptions& options);
// Writes wait for garbage collection while live, reserved and uncollected payload bytes
// would pass this percentage of the budget: the rest of the 1.25x disk allowance is for
// memtables, SSTs and the blob files being written. Under churn through a 1 GiB budget
// (4 MiB chunks, two flush threads) the directory peaked at 1.19-1.27x with 115, 1.19-1.20x
// with 110 and 1.13-1.15x with 105; 110 leaves room for noise without waiting at every
// collection (one runs per GcTriggerBytes, ~3% of the budget).
inline constexpr uint64_t kDiskCeilingPercent = 110;
// The longest one write waits for garbage collection; after it, it writes anyway (a run
// that cannot keep up must slow demotion, never stop it).
inline constexpr absl::Duration kGarbageWaitMax = absl::Seconds(2);
// Blob files are cut at this size (derived from the budget).
uint64_t BlobFileBytes(const RocksDbTierOptions& options);
// Free space the tier keeps on its filesystem: writes are refused below it, so RocksDB
// itself never runs out of space mid-flush (its WAL can reach 4 memtables, and a flush or
// garbage collection writes up to two blob files).
uint64_t MinFreeBytes(const RocksDbTierOptions& options);
// Steady-clock milliseconds (never 0), for the deferred-flush timer.
int64_t NowMs();

}  // namespace kvstash::storage::nvme
