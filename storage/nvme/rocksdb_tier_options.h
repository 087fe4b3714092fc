// RocksDbTierOptions: what configures the NVMe tier's database (storage/nvme/rocksdb_tier.h);
// its RocksDB settings derive from it (storage/nvme/rocksdb_tier_config.h).
//
// Thread-safety: a plain struct.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace kvstash::storage {

struct RocksDbTierOptions {
  // Directory of the database; created if missing. An existing database is reopened and
  // its index rebuilt from the metadata family.
  std::string path;
  // Byte budget of live chunk payloads. Puts evict chunks (in the order of `eviction`) to
  // stay within it; blob garbage collection keeps the directory within ~1.25x.
  // Budgets below 16 MiB work but the fixed files (WAL, MANIFEST, LOG) weigh more.
  uint64_t capacity_bytes = 64ull << 30;
  // fsync the WAL before a write returns. Off: acknowledged writes survive kill -9 but not
  // power loss; on: they survive both, at the cost of one fsync per chunk.
  bool sync_writes = false;
  // Longest time a kDeferred put stays only in the memtable: the maintenance thread flushes
  // after this long. Shorter: less write-back data lost to kill -9, but more and smaller
  // blob files. 0: flush only when the memtable fills or the tier closes.
  int64_t flush_interval_ms = 1000;
  // Run the tier's background work at nice 19: RocksDB's flush and compaction threads
  // (process-wide pools: once lowered they stay lowered), garbage collection, and the
  // demotion and cleaning threads of a ChunkStore over this tier. On a host whose cores
  // the requests keep busy, requests then go first; the price is that a put stream which
  // saturates every core fills the demotion queue sooner (more drops, or longer waits
  // with demotion_wait_ms).
  bool low_priority_background = true;
  // Eviction policy of the tier, one of KnownEvictionPolicies(). Frequency-based policies
  // ("s3fifo", "tinylfu") start without history after a restart; "chain" has no child
  // counts here (chunks carry no parent on NVMe) and behaves as "lru".
  std::string eviction = "lru";

  // Names the offending field ("nvme.<field>" via ChunkStoreOptions).
  absl::Status Validate() const;
};

}  // namespace kvstash::storage
