#include "storage/rocksdb_tier_config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "rocksdb/sst_file_manager.h"

namespace kvstash::storage::nvme {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// Payloads at least this large go to blob files. Smaller ones (MLA or test-model chunks of
// a few KiB) stay inline in the SST: a blob reference plus a second file read would cost
// more than the value itself. Every real KV chunk (MiBs) is far above it.
constexpr uint64_t kMinBlobBytes = 4096;

uint64_t Clamp(uint64_t v, uint64_t lo, uint64_t hi) { return std::max(lo, std::min(v, hi)); }

// Memtable of the payload family. Integrated BlobDB extracts blobs at flush, so until then
// the payload sits in the memtable (heap) and in the WAL (disk): both count against the
// budget's 25% slack, hence 1/64 of the budget, between 1 and 64 MiB.
uint64_t PayloadMemtableBytes(const RocksDbTierOptions& o) {
  return Clamp(o.capacity_bytes / 64, kMiB, 64 * kMiB);
}

}  // namespace

uint64_t BlobFileBytes(const RocksDbTierOptions& o) {
  // Small relative to the budget so garbage collection can drop whole files often (a file
  // goes only when all its blobs are dead or relocated); 256 MiB at most, as RocksDB's
  // default, to keep the file count modest on large disks.
  return Clamp(o.capacity_bytes / 32, kMiB, 256 * kMiB);
}

uint64_t MinFreeBytes(const RocksDbTierOptions& o) {
  return 4 * PayloadMemtableBytes(o) + 2 * BlobFileBytes(o);
}

uint64_t GcTriggerBytes(const RocksDbTierOptions& o) {
  // 5% of the budget of dead payload, but never less than two blob files' worth (a
  // compaction that cannot free a whole file frees nothing).
  return std::max(o.capacity_bytes / 20, 2 * BlobFileBytes(o));
}

DbConfig BuildDbConfig(const RocksDbTierOptions& o) {
  DbConfig c;
  rocksdb::DBOptions& db = c.db;
  db.create_if_missing = true;                // first start creates the layout
  db.create_missing_column_families = true;   // ...including payload and meta
  // After kill -9 a torn record at the WAL tail is dropped and everything before it is
  // recovered; kAbsoluteConsistency would refuse to open instead.
  db.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  // The meta family sees tiny writes and would pin old WAL files (which hold full payloads)
  // for a long time; past this total RocksDB flushes the families holding the oldest WAL.
  db.max_total_wal_size = 4 * PayloadMemtableBytes(o);
  // Flush plus garbage-collection compaction; the hosts have few cores, shared with the
  // network threads.
  db.max_background_jobs = 2;
  // Write dirty blob/SST/WAL pages back in 1 MiB steps instead of one large burst at file
  // close, which would stall foreground reads on the same device.
  db.bytes_per_sync = kMiB;
  db.wal_bytes_per_sync = kMiB;
  // The info LOG lives in the data directory and counts against the disk budget.
  db.max_log_file_size = kMiB;
  db.keep_log_file_num = 2;
  db.stats_dump_period_sec = 0;
  // With an SstFileManager RocksDB recovers by itself from out-of-space errors once space
  // is free again (it polls the free space). A manual DB::Resume() from the write path
  // instead can reuse a failed file writer and trip RocksDB's own assertions.
  db.sst_file_manager.reset(rocksdb::NewSstFileManager(rocksdb::Env::Default()));
  // Deliberately buffered I/O (no use_direct_reads): hot NVMe chunks then come from the
  // page cache, and the kernel's readahead suits the large sequential blob reads.

  rocksdb::ColumnFamilyOptions& p = c.payload;
  p.enable_blob_files = true;
  p.min_blob_size = kMinBlobBytes;
  p.blob_file_size = BlobFileBytes(o);
  // KV tensors (fp16/bf16/fp8) barely compress; compression would cost CPU on every put
  // and get for a few percent of space.
  p.blob_compression_type = rocksdb::kNoCompression;
  p.compression = rocksdb::kNoCompression;
  // Blob GC: compactions relocate the live blobs of the oldest half of blob files so those
  // files can be deleted. Approximate LRU deletes the oldest chunks first, so the oldest
  // files are mostly dead and relocation copies little.
  p.enable_blob_garbage_collection = true;
  p.blob_garbage_collection_age_cutoff = 0.25;
  // Once the oldest files are half dead RocksDB schedules the compaction itself; the tier
  // also forces one every GcTriggerBytes of deletes (see RocksDbTier::CollectGarbage).
  p.blob_garbage_collection_force_threshold = 0.8;
  p.blob_compaction_readahead_size = 2 * kMiB;  // relocation reads blob files sequentially
  p.write_buffer_size = PayloadMemtableBytes(o);
  // One memtable may flush while the next fills, so puts do not stall on a flush.
  p.max_write_buffer_number = 3;

  rocksdb::ColumnFamilyOptions& m = c.meta;
  // 33-byte records: 100k chunks are ~6 MiB of memtable. Flushing at 8 MiB keeps the WAL
  // that the meta family pins short (see max_total_wal_size).
  m.write_buffer_size = 8 * kMiB;
  m.max_write_buffer_number = 2;
  // Start-up scans this family front to back; the default table and compression (Snappy)
  // are fine for it. Point lookups never hit it (the in-memory index answers), so no bloom
  // filter.
  return c;
}

rocksdb::WriteOptions ChunkWriteOptions(const RocksDbTierOptions& o) {
  rocksdb::WriteOptions w;
  w.sync = o.sync_writes;  // see RocksDbTierOptions::sync_writes
  w.disableWAL = false;    // the WAL is what makes acknowledged puts survive kill -9
  return w;
}

rocksdb::ReadOptions PayloadReadOptions() {
  rocksdb::ReadOptions r;
  // The XXH3-64 in the metadata covers the payload end to end (blob file, page cache, our
  // copy); RocksDB's per-blob CRC would hash every byte a second time.
  r.verify_checksums = false;
  // Chunks read from NVMe are promoted into the DRAM tier; caching them in RocksDB too
  // would spend memory outside the DRAM budget on the same bytes.
  r.fill_cache = false;
  return r;
}

}  // namespace kvstash::storage::nvme

namespace kvstash::storage {

absl::Status RocksDbTierOptions::Validate() const {
  if (path.empty()) return absl::InvalidArgumentError("nvme.path must not be empty");
  constexpr uint64_t kMinCapacity = 1ull << 20;
  if (capacity_bytes < kMinCapacity) {
    return absl::InvalidArgumentError(absl::StrCat("nvme.capacity_bytes must be >= ",
                                                   kMinCapacity, " (got ", capacity_bytes, ")"));
  }
  return absl::OkStatus();
}

}  // namespace kvstash::storage
