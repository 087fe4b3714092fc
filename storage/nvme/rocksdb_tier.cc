#include "storage/nvme/rocksdb_tier.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/xxh3_dispatch.h"
#include "rocksdb/db.h"
#include "rocksdb/slice.h"
#include "rocksdb/write_batch.h"
#include "storage/nvme/nvme_format.h"
#include "storage/nvme/rocksdb_tier_config.h"

namespace kvstash::storage {
namespace {

using nvme::kDefault;
using nvme::kMeta;
using nvme::kPayload;
using nvme::NowMs;

// A chunk read from NVMe: owns the buffer RocksDB read the blob into (no further copy).
class NvmeChunk final : public StoredChunk {
 public:
  NvmeChunk(const ChunkMeta& meta, std::unique_ptr<rocksdb::PinnableSlice> value)
      : meta_(meta),
        value_(std::move(value)),
        segment_{reinterpret_cast<const uint8_t*>(value_->data()), value_->size()} {}
  const ChunkMeta& meta() const override { return meta_; }
  absl::Span<const Segment> segments() const override { return {&segment_, 1}; }

 private:
  const ChunkMeta meta_;
  const std::unique_ptr<rocksdb::PinnableSlice> value_;
  const Segment segment_;
};

absl::string_view View(const rocksdb::Slice& s) { return absl::string_view(s.data(), s.size()); }

absl::Status CheckFormat(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
  std::string value;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), cf, nvme::kFormatKey, &value);
  if (s.IsNotFound()) {
    rocksdb::WriteOptions w;
    w.sync = true;  // once per database
    s = db->Put(w, cf, nvme::kFormatKey, std::string(1, static_cast<char>(nvme::kFormatVersion)));
    if (!s.ok()) return absl::UnavailableError(absl::StrCat("nvme: ", s.ToString()));
    return absl::OkStatus();
  }
  if (!s.ok()) return absl::UnavailableError(absl::StrCat("nvme: ", s.ToString()));
  if (value.size() != 1 || static_cast<uint8_t>(value[0]) != nvme::kFormatVersion) {
    return absl::FailedPreconditionError(
        "nvme.path holds a database of an unknown format version; move it away or point "
        "nvme.path elsewhere");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<RocksDbTier>> RocksDbTier::Open(const RocksDbTierOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  std::unique_ptr<rocksdb::DB> db;
  Families families;
  if (absl::Status s = OpenDb(options, &db, &families); !s.ok()) return s;
  std::unique_ptr<RocksDbTier> tier(new RocksDbTier(options, std::move(db), std::move(families)));
  {
    absl::ReaderMutexLock lock(&tier->db_mu_);
    if (absl::Status st = CheckFormat(tier->db_.get(), tier->families_[kDefault]); !st.ok()) {
      return st;
    }
  }
  if (absl::Status st = tier->LoadIndex(); !st.ok()) return st;
  tier->maintenance_thread_ = std::thread([t = tier.get()] { t->MaintenanceLoop(); });
  return tier;
}

RocksDbTier::RocksDbTier(const RocksDbTierOptions& options, std::unique_ptr<rocksdb::DB> db,
                         Families families)
    : options_(options),
      db_(std::move(db)),
      families_(std::move(families)),
      gc_trigger_bytes_(nvme::GcTriggerBytes(options)) {}

RocksDbTier::~RocksDbTier() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  {
    absl::ReaderMutexLock lock(&db_mu_);
    if (db_ != nullptr) db_->DisableManualCompaction();  // a running GC returns early
  }
  if (maintenance_thread_.joinable()) maintenance_thread_.join();
  // kDeferred writes become durable here; after a write error there is nothing to save.
  if (!writes_suspended()) Flush().IgnoreError();
  absl::MutexLock lock(&db_mu_);
  CloseDbLocked();
}

void RocksDbTier::CloseDbLocked() {
  if (db_ == nullptr) return;
  for (rocksdb::ColumnFamilyHandle* h : families_) db_->DestroyColumnFamilyHandle(h);
  families_.clear();
  db_->Close().PermitUncheckedError();  // the WAL and atomic flushes make this safe anyway
  db_.reset();
}

absl::Status RocksDbTier::ScanIndex(std::vector<std::unique_ptr<Entry>>* loaded,
                                    std::vector<std::string>* drop) {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;  // one pass; caching would only evict useful blocks
  ro.readahead_size = 2 << 20;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, families_[kMeta]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::optional<ChunkId> id = nvme::DecodeKey(View(it->key()));
    const std::optional<nvme::MetaRecord> rec = nvme::DecodeMeta(View(it->value()));
    if (!id || !rec) {
      // Unknown version or truncated: never trust it; deleting keeps restarts clean.
      drop->push_back(it->key().ToString());
      continue;
    }
    auto e = std::make_unique<Entry>();
    e->id = *id;
    e->meta = rec->meta;
    e->size_bytes = rec->meta.size_bytes;
    e->sequence = rec->sequence;
    loaded->push_back(std::move(e));
  }
  if (!it->status().ok()) {
    return absl::UnavailableError(
        absl::StrCat("nvme: scanning metadata: ", it->status().ToString()));
  }
  // Oldest first, so the policy sees the chunks in the order they were last used.
  std::sort(loaded->begin(), loaded->end(),
            [](const auto& a, const auto& b) { return a->sequence < b->sequence; });
  return absl::OkStatus();
}

void RocksDbTier::DropRecords(const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  rocksdb::Status s =
      GuardedWrite(WriteMode::kLogged, 0, [&](const Families& f, rocksdb::WriteBatch* b) {
        rocksdb::Status st;
        for (const std::string& k : keys) {
          if (st.ok()) st = b->Delete(f[kMeta], k);
          if (st.ok()) st = b->Delete(f[kPayload], k);
        }
        return st;
      });
  if (!s.ok()) IoError("delete", s.ToString()).IgnoreError();
}

absl::Mutex& RocksDbTier::StripeFor(const ChunkId& id) const {
  return stripes_[absl::HashOf(id) % kStripes];
}

void RocksDbTier::InsertLocked(std::unique_ptr<Entry> entry) {
  Entry* e = entry.get();
  e->generation = next_generation_++;
  e->key_hash = absl::HashOf(e->id);
  policy_->OnInsert(e);
  live_bytes_ += e->meta.size_bytes;
  NamespaceUsage& ns = ns_usage_[e->id.ns];
  ++ns.chunks;
  ns.bytes += e->meta.size_bytes;
  entries_[e->id] = std::move(entry);
}

void RocksDbTier::EraseLocked(Entry* e) {
  policy_->OnErase(e);
  live_bytes_ -= e->meta.size_bytes;
  auto ns = ns_usage_.find(e->id.ns);
  if (--ns->second.chunks == 0) {
    ns_usage_.erase(ns);
  } else {
    ns->second.bytes -= e->meta.size_bytes;
  }
  garbage_bytes_ += e->meta.size_bytes;
  uncollected_bytes_ += e->meta.size_bytes;
  const ChunkId id = e->id;  // erase destroys *e
  entries_.erase(id);
}

absl::Status RocksDbTier::Put(const ChunkId& id, const StoredChunk& chunk, WriteMode mode) {
  const uint64_t size = chunk.meta().size_bytes;
  if (size > options_.capacity_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "chunk of ", size, " bytes exceeds nvme.capacity_bytes (", options_.capacity_bytes, ")"));
  }
  {
    absl::MutexLock lock(&mu_);
    if (entries_.contains(id)) return absl::OkStatus();
    reserved_bytes_ += size;
  }
  MakeRoom(0);  // the reservation above already counts `size`
  WaitForCollectedGarbage();
  absl::MutexLock stripe(&StripeFor(id));
  bool present;
  uint64_t sequence;
  {
    absl::MutexLock lock(&mu_);
    present = entries_.contains(id);
    sequence = next_sequence_++;
  }
  // The checksum may be computed only now (a DRAM chunk with a deferred checksum).
  ChunkMeta stored = chunk.meta();
  if (!present) stored.checksum = chunk.checksum();
  absl::Status s = present ? absl::OkStatus() : WriteChunk(id, chunk, stored, sequence, mode);
  absl::MutexLock lock(&mu_);
  reserved_bytes_ -= size;
  if (present || !s.ok()) return s;
  auto e = std::make_unique<Entry>();
  e->id = id;
  e->meta = stored;
  e->size_bytes = size;
  e->sequence = sequence;
  InsertLocked(std::move(e));
  ++counters_.puts;
  return absl::OkStatus();
}

absl::Status RocksDbTier::WriteChunk(const ChunkId& id, const StoredChunk& chunk,
                                     const ChunkMeta& stored, uint64_t sequence, WriteMode mode) {
  const std::string key = nvme::EncodeKey(id);
  const std::string meta = nvme::EncodeMeta({stored, sequence});
  std::vector<rocksdb::Slice> parts;
  for (const Segment& seg : chunk.segments()) {
    parts.emplace_back(reinterpret_cast<const char*>(seg.data), seg.size);
  }
  const rocksdb::Slice key_slice(key);
  // One batch: after a crash both families hold the chunk or neither does.
  // Reserved: growing the batch past the payload would copy the payload once more.
  const size_t reserve = chunk.meta().size_bytes + key.size() * 2 + meta.size() + 64;
  const rocksdb::Status s =
      GuardedWrite(mode, reserve, [&](const Families& f, rocksdb::WriteBatch* b) {
        rocksdb::Status st =
            b->Put(f[kPayload], rocksdb::SliceParts(&key_slice, 1),
                   rocksdb::SliceParts(parts.data(), static_cast<int>(parts.size())));
        return st.ok() ? b->Put(f[kMeta], key, meta) : st;
      });
  if (!s.ok()) return IoError("write", s.ToString());
  return absl::OkStatus();
}

void RocksDbTier::MakeRoom(uint64_t size) {
  for (;;) {
    ChunkId victim;
    uint64_t generation;
    {
      absl::MutexLock lock(&mu_);
      if (live_bytes_ + reserved_bytes_ + size <= options_.capacity_bytes) return;
      // Nothing here is pinned: readers hold their own copy of the payload.
      const PolicyHook* h = policy_->PickVictim([](const PolicyHook*) { return true; });
      if (h == nullptr) return;  // only reservations left: let them overshoot briefly
      victim = static_cast<const Entry*>(h)->id;
      generation = static_cast<const Entry*>(h)->generation;
    }
    if (Remove(victim, generation)) {
      absl::MutexLock lock(&mu_);
      ++counters_.evictions;
    }
  }
}

bool RocksDbTier::OverDiskCeilingLocked() const {
  const uint64_t ceiling = options_.capacity_bytes / 100 * nvme::kDiskCeilingPercent;
  return live_bytes_ + reserved_bytes_ + uncollected_bytes_ > ceiling;
}

void RocksDbTier::WaitForCollectedGarbage() {
  absl::MutexLock lock(&mu_);
  const absl::Time give_up = absl::Now() + nvme::kGarbageWaitMax;
  bool waited = false;
  // Only while a run is under way or has garbage to start on: a run that finished leaves
  // uncollected_bytes_ lower, so waiting never outlasts what collection can reclaim.
  while (!stopping_ && !writes_suspended() && OverDiskCeilingLocked() &&
         (gc_running_ || garbage_bytes_ > 0) && absl::Now() < give_up) {
    gc_wanted_ = true;
    waited = true;
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(5));
  }
  if (waited) ++counters_.gc_waits;
}

bool RocksDbTier::Remove(const ChunkId& id, uint64_t generation) {
  absl::MutexLock stripe(&StripeFor(id));
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    if (generation != 0 && it->second->generation != generation) return false;
    EraseLocked(it->second.get());
  }
  const std::string key = nvme::EncodeKey(id);
  const rocksdb::Status s =
      GuardedWrite(WriteMode::kLogged, 0, [&](const Families& f, rocksdb::WriteBatch* b) {
        rocksdb::Status st = b->Delete(f[kPayload], key);
        return st.ok() ? b->Delete(f[kMeta], key) : st;
      });
  // On failure the chunk stays on disk but not in the index: it is garbage until the next
  // restart re-indexes it (and then it is still verified before being served).
  if (!s.ok()) IoError("delete", s.ToString()).IgnoreError();
  return true;
}

absl::Status RocksDbTier::Delete(const ChunkId& id) {
  if (!Remove(id, 0)) return absl::NotFoundError("chunk not found");
  absl::MutexLock lock(&mu_);
  ++counters_.deletes;
  return absl::OkStatus();
}

bool RocksDbTier::Contains(const ChunkId& id) const {
  absl::MutexLock lock(&mu_);
  return entries_.contains(id);
}

absl::StatusOr<ChunkRef> RocksDbTier::Get(const ChunkId& id) {
  ChunkMeta meta;
  uint64_t generation;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      ++counters_.misses;
      return absl::NotFoundError("chunk not found");
    }
    meta = it->second->meta;
    generation = it->second->generation;
  }
  auto value = std::make_unique<rocksdb::PinnableSlice>();
  const std::string key = nvme::EncodeKey(id);
  rocksdb::Status s;
  {
    absl::ReaderMutexLock lock(&db_mu_);
    s = db_ == nullptr
            ? rocksdb::Status::IOError("database closed after a failed reopen")
            : db_->Get(nvme::PayloadReadOptions(), families_[kPayload], key, value.get());
  }
  const bool corrupt =
      s.IsCorruption() || (s.ok() && (value->size() != meta.size_bytes ||
                                      XXH3_64bits(value->data(), value->size()) != meta.checksum));
  if (corrupt || s.IsNotFound()) {
    // Never served: drop it so the next put of this key stores good bytes.
    Remove(id, generation);
    absl::MutexLock lock(&mu_);
    ++counters_.misses;
    if (corrupt) ++counters_.checksum_failures;
    return absl::NotFoundError(corrupt ? "chunk failed checksum verification (deleted)"
                                       : "chunk payload missing (deleted)");
  }
  if (!s.ok()) {
    IoError("read", s.ToString()).IgnoreError();
    absl::MutexLock lock(&mu_);
    ++counters_.misses;
    return absl::NotFoundError(absl::StrCat("nvme read failed: ", s.ToString()));
  }
  Touch(id, generation);
  return std::make_shared<NvmeChunk>(meta, std::move(value));
}

void RocksDbTier::Touch(const ChunkId& id, uint64_t generation) {
  uint64_t sequence;
  {
    absl::MutexLock lock(&mu_);
    ++counters_.hits;
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second->generation != generation) return;
    Entry* e = it->second.get();
    policy_->OnAccess(e);
    // Persist the new position only once the chunk has fallen behind half the index, so a
    // hot chunk costs one metadata write per half turnover, not one per hit.
    if (next_sequence_ - e->sequence <= entries_.size() / 2) return;
    sequence = next_sequence_++;
  }
  absl::MutexLock stripe(&StripeFor(id));  // keeps a concurrent Remove from being undone
  ChunkMeta meta;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second->generation != generation) return;
    it->second->sequence = sequence;
    meta = it->second->meta;
  }
  // Deferred: a lost update only ages the chunk after a restart.
  const rocksdb::Status s =
      GuardedWrite(WriteMode::kDeferred, 0, [&](const Families& f, rocksdb::WriteBatch* b) {
        return b->Put(f[kMeta], nvme::EncodeKey(id), nvme::EncodeMeta({meta, sequence}));
      });
  if (!s.ok()) IoError("write", s.ToString()).IgnoreError();
}

absl::Status RocksDbTier::IoError(const char* what, const std::string& detail) {
  {
    absl::MutexLock lock(&mu_);
    ++counters_.io_errors;
  }
  return absl::UnavailableError(absl::StrCat("nvme ", what, " failed: ", detail));
}

bool RocksDbTier::HasFreeSpaceFloor() const {
  struct statvfs fs;
  if (statvfs(options_.path.c_str(), &fs) != 0) return true;  // unknown: let RocksDB try
  return uint64_t{fs.f_bavail} * fs.f_frsize >= nvme::MinFreeBytes(options_);
}

rocksdb::Status RocksDbTier::GuardedWrite(WriteMode mode, size_t reserve_bytes, BatchFill fill) {
  absl::MutexLock lock(&write_mu_);
  if (writes_suspended()) {
    return rocksdb::Status::Aborted("writes suspended after an I/O error; reopen pending");
  }
  absl::ReaderMutexLock db(&db_mu_);
  if (db_ == nullptr) return rocksdb::Status::Aborted("database closed after a failed reopen");
  rocksdb::WriteBatch batch(reserve_bytes);
  rocksdb::Status s = fill(families_, &batch);
  if (!s.ok()) return s;
  // Refusing below the floor keeps RocksDB itself from ever hitting ENOSPC mid-write.
  if (batch.HasPut() && !HasFreeSpaceFloor()) {
    return rocksdb::Status::NoSpace("filesystem nearly full; keeping free space for RocksDB");
  }
  const bool deferred = mode == WriteMode::kDeferred;
  s = db_->Write(deferred ? nvme::DeferredWriteOptions() : nvme::ChunkWriteOptions(options_),
                 &batch);
  if (!s.ok()) {
    writes_suspended_.store(true, std::memory_order_release);
    return s;
  }
  int64_t none = 0;
  if (deferred) deferred_since_ms_.compare_exchange_strong(none, NowMs());
  return s;
}

absl::Status RocksDbTier::Flush() {
  if (writes_suspended()) return absl::UnavailableError("nvme writes suspended");
  deferred_since_ms_.store(0);  // writes from now on ask for the next flush
  rocksdb::Status s;
  {
    absl::ReaderMutexLock lock(&db_mu_);
    if (db_ == nullptr) return absl::UnavailableError("nvme database closed");
    // atomic_flush: the families' memtables reach disk in one MANIFEST commit. Every family
    // is named, the default one too: RocksDB 7.8 keeps one flush reason per family, so a
    // manual request for a subset of the families in a pending automatic one rewrites the
    // reasons of some of them and trips an assertion (and abort) in the background flush
    // (facebook/rocksdb#11111, fixed in 8.0).
    s = db_->Flush(rocksdb::FlushOptions(), families_);
  }
  if (s.ok() || s.IsShutdownInProgress()) return absl::OkStatus();
  // The database is in an error state now (e.g. ENOSPC in a blob file): write no more
  // until MaybeRecover has reopened it.
  writes_suspended_.store(true, std::memory_order_release);
  return IoError("flush", s.ToString());
}

TierStats RocksDbTier::Stats() const {
  TierStats t;
  t.tier = Tier::kNvme;
  t.capacity_bytes = options_.capacity_bytes;
  {
    absl::MutexLock lock(&mu_);
    t.chunks = entries_.size();
    t.chunk_bytes = live_bytes_;
  }
  // On-disk bytes of blob and SST files (WAL and LOG aside), garbage included.
  absl::ReaderMutexLock lock(&db_mu_);
  if (db_ == nullptr) return t;
  for (int f : {kPayload, kMeta}) {
    uint64_t v = 0;
    if (db_->GetIntProperty(families_[f], rocksdb::DB::Properties::kTotalBlobFileSize, &v)) {
      t.used_bytes += v;
    }
    if (db_->GetIntProperty(families_[f], rocksdb::DB::Properties::kTotalSstFilesSize, &v)) {
      t.used_bytes += v;
    }
  }
  return t;
}

RocksDbTierCounters RocksDbTier::Counters() const {
  absl::MutexLock lock(&mu_);
  RocksDbTierCounters c = counters_;
  c.writes_suspended = writes_suspended();
  return c;
}

}  // namespace kvstash::storage
