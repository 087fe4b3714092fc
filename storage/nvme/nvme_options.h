// NvmeOptions: the NVMe tier as configured (ChunkStoreOptions::nvme, config
// `storage.nvme`), and the RocksDB tier's options derived from them.
//
// Thread-safety: a plain struct and a pure function.
#pragma once

#include <cstdint>
#include <string>

#include "storage/nvme/rocksdb_tier_options.h"

namespace kvstash::storage {

// The NVMe tier (RocksDB with blob files, see docs/storage-format.md). Off by default.
struct NvmeOptions {
  // Most demotion_threads and read_threads accepted.
  static constexpr int kMaxThreads = 64;
  // Database directory on a local SSD. Empty: no NVMe tier (DRAM only). An existing
  // database there is reopened and its chunks served again after the index is rebuilt
  // from the metadata family.
  std::string path;
  // Byte budget of chunk payloads on NVMe; chunks are evicted past it, in the order of
  // `eviction`.
  // The directory settles within ~1.25x of it (blob garbage, WAL, SST files). 16 GiB fits
  // a laptop or CI disk; set it to most of a dedicated SSD in production.
  uint64_t capacity_bytes = 16ull << 30;
  // Background threads writing DRAM evictions to NVMe. One keeps up with a single SSD
  // for MiB-sized chunks; more help with many small chunks or sync_writes.
  int demotion_threads = 1;
  // Threads reading chunks from NVMe for GetAsync (the transports' gets), so that reads
  // wait on the disk in parallel and never on a network thread.
  int read_threads = 4;
  // Paces NVMe reads to this many bytes per second across all read threads (each read
  // waits its size / rate; storage/nvme/rate_limiter.h). 0 (default): unlimited. For tests and
  // demonstrations of a slow tier (clients' fetch-or-recompute decisions) on a fast disk.
  // A read in progress finishes its wait at shutdown: keep read_threads x the largest
  // chunk / rate to seconds.
  uint64_t read_bytes_per_s = 0;
  // Evicted chunks waiting to be written. Queued chunks keep their DRAM until written,
  // so this (with a quarter of the DRAM budget in bytes) bounds the DRAM held by
  // demotion. A put whose eviction finds the queue full waits (demotion_wait_ms).
  int demotion_queue_chunks = 16;
  // Longest time a put waits for room in a full demotion queue before the evicted chunk
  // is dropped (demotion_drops). 0 (default): never block the put path, drop at once; a
  // cache loses only a copy. > 0: back-pressure, puts slow to the pace NVMe absorbs.
  int64_t demotion_wait_ms = 0;
  // The cleaner writes the coldest DRAM chunks to NVMe ahead of eviction, keeping this
  // percentage of the DRAM budget (at its cold end) clean once DRAM is that full;
  // evicting a clean chunk costs no write. 0 turns the cleaner off (chunks are written
  // only when evicted). See storage/nvme/cleaner.h.
  int clean_window_percent = 25;
  // Write-back demotions and cleanings skip the WAL and become durable when RocksDB
  // flushes its memtable: when it fills, at the latest this long after the write, and
  // at a clean shutdown. 0: no timed flush. See docs/storage-format.md (Durability).
  int64_t flush_interval_ms = 1000;
  // Also write every put to NVMe before CommitPut returns (not only on eviction): puts
  // then survive a restart as soon as they are acknowledged, at disk speed. A failed
  // NVMe write is counted in io_errors; the chunk is still served from DRAM.
  bool write_through = false;
  // fsync the WAL on every NVMe write. Off: written chunks survive kill -9 but not
  // power loss. On: they survive both, at one fsync per chunk.
  bool sync_writes = false;
  // Copy a chunk that Get served from NVMe into DRAM (evicting as a put would), so the
  // next get is a DRAM hit. Off: NVMe hits stay on NVMe.
  bool promote_on_hit = true;
  // Run demotion, cleaning and RocksDB's flushes, compactions and garbage collection at
  // nice 19, so requests go first on a busy host (see RocksDbTierOptions).
  bool low_priority_background = true;
  // Eviction policy of the NVMe tier (as dram_eviction; see RocksDbTierOptions::eviction).
  std::string eviction = "lru";
  // NVMe admission: 0 (default) writes every DRAM eviction to NVMe; N > 0 writes only
  // chunks read at least N times while in DRAM, a read being a Get (a Lookup hit and the
  // fetch after it count once) (others are dropped and counted in
  // admission_declined), sparing SSD writes for chunks unlikely to come back. Chunks whose
  // hints keep them (sessions, pins, TTLs) are always written. Applies to the cleaner too.
  int admission_min_hits = 0;
};

// The RocksDB tier's options for `nvme`.
RocksDbTierOptions NvmeTierOptions(const NvmeOptions& nvme);

}  // namespace kvstash::storage
