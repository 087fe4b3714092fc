// RocksDbTier's database lifecycle and maintenance thread: opening the database, blob
// garbage collection, the periodic flush of kDeferred writes, and the reopen that resumes
// writing after a failed write once the filesystem has room again.
#include <utility>

#include "absl/strings/str_cat.h"
#include "rocksdb/db.h"
#include "storage/background_thread.h"
#include "storage/nvme/nvme_format.h"
#include "storage/nvme/rocksdb_tier.h"
#include "storage/nvme/rocksdb_tier_config.h"

namespace kvstash::storage {
namespace {

// Wake-up period of the maintenance thread when nothing signals it.
constexpr absl::Duration kTick = absl::Milliseconds(50);
using nvme::kPayload;

// Least time between two reopen attempts.
constexpr absl::Duration kRecoveryBackoff = absl::Seconds(1);

}  // namespace

absl::Status RocksDbTier::OpenDb(const RocksDbTierOptions& options,
                                 std::unique_ptr<rocksdb::DB>* db, Families* families) {
  const nvme::DbConfig config = nvme::BuildDbConfig(options);
  const std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {nvme::kPayloadFamily, config.payload},
      {nvme::kMetaFamily, config.meta}};
  rocksdb::DB* raw = nullptr;
  families->clear();
  const rocksdb::Status s = rocksdb::DB::Open(config.db, options.path, descriptors, families, &raw);
  if (!s.ok()) {
    return absl::UnavailableError(absl::StrCat("nvme: cannot open RocksDB at nvme.path '",
                                               options.path, "': ", s.ToString()));
  }
  db->reset(raw);
  if (options.low_priority_background) {
    // Flushes run in the HIGH pool, compactions (blob garbage collection) in the LOW one;
    // kLow is nice 19. NotSupported on an Env without pools is harmless: nothing to lower.
    for (rocksdb::Env::Priority pool :
         {rocksdb::Env::Priority::HIGH, rocksdb::Env::Priority::LOW}) {
      config.db.env->LowerThreadPoolCPUPriority(pool, rocksdb::CpuPriority::kLow)
          .PermitUncheckedError();
    }
  }
  return absl::OkStatus();
}

void RocksDbTier::MaintenanceLoop() {
  SetUpBackgroundThread("kvstash-nvme", options_.low_priority_background);
  absl::MutexLock lock(&mu_);
  for (;;) {
    mu_.AwaitWithTimeout(absl::Condition(this, &RocksDbTier::MaintenanceWanted), kTick);
    if (stopping_) return;
    const bool gc = MaintenanceWanted();
    mu_.Unlock();
    if (gc) CollectGarbage().IgnoreError();  // counted in io_errors
    MaybeFlushDeferred();
    MaybeRecover();
    mu_.Lock();
  }
}

absl::Status RocksDbTier::CollectGarbage() {
  if (writes_suspended()) return absl::OkStatus();  // would write new blob files
  absl::MutexLock gc(&gc_mu_);
  uint64_t covered = 0;
  {
    absl::MutexLock lock(&mu_);
    covered = garbage_bytes_;
    garbage_bytes_ = 0;  // deletes from now on count toward the next run
    gc_wanted_ = false;
    gc_running_ = true;
  }
  rocksdb::CompactRangeOptions cro;
  cro.exclusive_manual_compaction = false;  // automatic flushes/compactions keep running
  // The payload family's SSTs hold only keys and blob references, so rewriting all of them
  // is cheap; forcing the bottommost level makes every blob file eligible for GC.
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  cro.blob_garbage_collection_policy = rocksdb::BlobGarbageCollectionPolicy::kForce;
  rocksdb::Status s;
  {
    absl::ReaderMutexLock lock(&db_mu_);
    if (db_ != nullptr) s = db_->CompactRange(cro, families_[kPayload], nullptr, nullptr);
  }
  {
    absl::MutexLock lock(&mu_);
    ++counters_.gc_runs;
    gc_running_ = false;
    // Counted as reclaimed even if the run failed: waiting writes must not wait on it.
    uncollected_bytes_ -= std::min(uncollected_bytes_, covered);
  }
  if (s.IsIncomplete() || s.IsShutdownInProgress()) return absl::OkStatus();  // stopping
  return s.ok() ? absl::OkStatus() : IoError("garbage collection", s.ToString());
}

void RocksDbTier::MaybeFlushDeferred() {
  const int64_t since = deferred_since_ms_.load();
  if (since == 0 || options_.flush_interval_ms == 0) return;
  if (nvme::NowMs() - since < options_.flush_interval_ms) return;
  Flush().IgnoreError();  // counted in io_errors
}

void RocksDbTier::MaybeRecover() {
  if (!writes_suspended() || !HasFreeSpaceFloor()) return;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    if (now - last_recovery_attempt_ < kRecoveryBackoff) return;
    last_recovery_attempt_ = now;
  }
  Reopen().IgnoreError();  // counted in io_errors; retried after the backoff
}

// Closing and opening again gives RocksDB fresh WAL and file writers, the only way out of
// a failed write that RocksDB 7.8 handles without tripping its assertions. kDeferred writes
// not yet flushed are lost (they were never durable); the index is reloaded from what the
// reopened database holds, so it never points at them.
absl::Status RocksDbTier::Reopen() {
  absl::StatusOr<EvictionPolicyPtr> policy = MakePolicy();
  if (!policy.ok()) return policy.status();
  absl::MutexLock write(&write_mu_);  // no write starts while the database changes
  std::vector<std::unique_ptr<Entry>> loaded;
  std::vector<std::string> drop;
  {
    absl::MutexLock db(&db_mu_);
    CloseDbLocked();
    if (absl::Status s = OpenDb(options_, &db_, &families_); !s.ok()) {
      return IoError("reopen", std::string(s.message()));
    }
    if (absl::Status s = ScanIndex(&loaded, &drop); !s.ok()) {
      return IoError("reopen", std::string(s.message()));
    }
  }
  {
    absl::MutexLock lock(&mu_);
    InstallIndexLocked(std::move(loaded), *std::move(policy));
    ++counters_.reopens;
  }
  deferred_since_ms_.store(0);
  writes_suspended_.store(false, std::memory_order_release);
  return absl::OkStatus();
}

}  // namespace kvstash::storage
