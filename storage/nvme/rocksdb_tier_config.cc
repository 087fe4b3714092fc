#include "storage/nvme/rocksdb_tier_config.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rocksdb/env.h"
#include "rocksdb/sst_file_manager.h"
#include "storage/policy/policies.h"

namespace kvstash::storage::nvme {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// Payloads at least this large go to blob files. Smaller ones (MLA or test-model chunks of
// a few KiB) stay inline in the SST: a blob reference plus a second file read would cost
// more than the value itself. Every real KV chunk (MiBs) is far above it.
constexpr uint64_t kMinBlobBytes = 4096;

uint64_t Clamp(uint64_t v, uint64_t lo, uint64_t hi) { return std::max(lo, std::min(v, hi)); }

// RocksDB's info log, kept off the data directory: its default LOG file there fails with
// ENOSPC along with the database, and RocksDB 7.8 then aborts on an assertion at the next
// log line (WritableFileWriter::AssertFalseAndGetStatusForPrevError), which a full disk
// must never cause. Errors go to stderr (the daemon's log); chatter is dropped.
class StderrErrorLogger final : public rocksdb::Logger {
 public:
  StderrErrorLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::ERROR_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    std::fputs("rocksdb: ", stderr);
    std::vfprintf(stderr, format, ap);
    std::fputc('\n', stderr);
  }
};

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
  return Clamp(o.capacity_bytes / 64, kMiB, 256 * kMiB);
}

uint64_t MinFreeBytes(const RocksDbTierOptions& o) {
  return 4 * PayloadMemtableBytes(o) + 2 * BlobFileBytes(o);
}

uint64_t GcTriggerBytes(const RocksDbTierOptions& o) {
  // 2.5% of the budget of dead payload, but never less than two blob files' worth (a
  // compaction that cannot free a whole file frees nothing). Garbage written while a run
  // is under way waits for the next, so frequent cheap runs keep the directory closest
  // to the budget under churn.
  return std::max(o.capacity_bytes / 40, 2 * BlobFileBytes(o));
}

DbConfig BuildDbConfig(const RocksDbTierOptions& o) {
  DbConfig c;
  rocksdb::DBOptions& db = c.db;
  db.create_if_missing = true;               // first start creates the layout
  db.create_missing_column_families = true;  // ...including payload and meta
  // After kill -9 a torn record at the WAL tail is dropped and everything before it is
  // recovered; kAbsoluteConsistency would refuse to open instead.
  db.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  // The meta family sees tiny writes and would pin old WAL files (which hold full payloads)
  // for a long time; past this total RocksDB flushes the families holding the oldest WAL.
  db.max_total_wal_size = 4 * PayloadMemtableBytes(o);
  // Two flush threads, because one flush copies and checksums a blob and then waits for
  // its direct write, leaving the disk idle half the time; one compaction thread.
  db.max_background_flushes = 2;
  db.max_background_compactions = 1;
  // Write dirty pages (the WAL; MANIFEST) back in 1 MiB steps instead of one large burst
  // at file close, which would stall foreground reads on the same device.
  db.bytes_per_sync = kMiB;
  db.wal_bytes_per_sync = kMiB;
  db.info_log = std::make_shared<StderrErrorLogger>();
  db.stats_dump_period_sec = 0;
  // The SstFileManager tracks the database's space. After a failed write the tier does not
  // rely on RocksDB's own recovery or DB::Resume() (either may reuse a failed file writer
  // and trip RocksDB's assertions): it reopens the database (RocksDbTier::Reopen).
  db.sst_file_manager.reset(rocksdb::NewSstFileManager(rocksdb::Env::Default()));
  // kDeferred writes skip the WAL, so a flush of one family without the other would leave
  // a payload without its metadata (or the reverse) after a crash: flush them together.
  db.atomic_flush = true;
  // Direct reads, because buffered reads under RocksDB's FADV_RANDOM split a blob into
  // synchronous pieces, and the page cache would duplicate what promotion puts in DRAM.
  db.use_direct_reads = true;
  // Direct writes too, because buffered writeback of blob files runs far below the disk;
  // 4 MiB write buffers keep the device busy at queue depth one. The WAL stays buffered.
  db.use_direct_io_for_flush_and_compaction = true;
  db.writable_file_max_buffer_size = 4 * kMiB;

  rocksdb::ColumnFamilyOptions& p = c.payload;
  p.enable_blob_files = true;
  p.min_blob_size = kMinBlobBytes;
  p.blob_file_size = BlobFileBytes(o);
  // KV tensors (fp16/bf16/fp8) barely compress; compression would cost CPU on every put
  // and get for a few percent of space.
  p.blob_compression_type = rocksdb::kNoCompression;
  p.compression = rocksdb::kNoCompression;
  // Blob GC: the tier's own compaction (RocksDbTier::CollectGarbage, every GcTriggerBytes
  // of deletes) relocates the live blobs of the oldest quarter of blob files so those files
  // can be deleted. Approximate LRU deletes the oldest chunks first, so the oldest files are
  // mostly dead and relocation copies little. Off for RocksDB's automatic compactions: with
  // it on, every L0 compaction of a growing tier (no garbage yet) rewrote the oldest
  // quarter's blobs, doubling what demotion writes.
  p.enable_blob_garbage_collection = false;
  // Only the oldest 10% of blob files are relocated: with (approximate) LRU the dead
  // chunks are the oldest, so that covers the files a run can free; fully dead files go
  // without relocation anyway. 0.25 relocated a quarter of all live data per run under
  // churn (4x write amplification at a 1 GiB budget) and let garbage pile up meanwhile.
  p.blob_garbage_collection_age_cutoff = 0.1;
  p.blob_compaction_readahead_size = 2 * kMiB;  // relocation reads blob files sequentially
  p.write_buffer_size = PayloadMemtableBytes(o);
  // One memtable may flush while the next fills, so puts do not stall on a flush.
  p.max_write_buffer_number = 3;

  rocksdb::ColumnFamilyOptions& m = c.meta;
  // 33-byte records: 100k chunks are ~6 MiB of memtable. Flushing at 8 MiB keeps the WAL
  // that the meta family pins short (see max_total_wal_size).
  m.write_buffer_size = 8 * kMiB;
  // Atomic flush switches the memtables of both families together, so this family holds as
  // many immutable memtables as the payload family. It must not be the one to stop or slow
  // writes (RocksDB slows writes to delayed_write_rate, 16 MB/s, one memtable short of the
  // limit when the limit is above 3): two more than the payload family's limit.
  m.max_write_buffer_number = p.max_write_buffer_number + 2;
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

rocksdb::WriteOptions DeferredWriteOptions() {
  rocksdb::WriteOptions w;
  w.disableWAL = true;  // durability comes from the (atomic) flush, see WriteMode
  return w;
}

int64_t NowMs() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
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
    return absl::InvalidArgumentError(absl::StrCat("nvme.capacity_bytes must be >= ", kMinCapacity,
                                                   " (got ", capacity_bytes, ")"));
  }
  if (flush_interval_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("nvme.flush_interval_ms must be >= 0 (got ", flush_interval_ms, ")"));
  }
  return CreateEvictionPolicy(eviction, "nvme.eviction").status();
}

}  // namespace kvstash::storage
