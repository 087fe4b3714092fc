#include "storage/nvme/cleaner.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/background_thread.h"

namespace kvstash::storage {
namespace {

// Entries looked at per index shard and pass: bounds a pass over an index of many small
// chunks; the next pass sees the next ones once these are clean or evicted.
constexpr int kMaxEntriesPerShard = 64;

}  // namespace

absl::Status CleanerOptions::Validate() const {
  if (window_percent < 1 || window_percent > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("nvme.clean_window_percent must be between 0 (cleaner off) and 100 (got ",
                     window_percent, ")"));
  }
  if (idle_poll_ms < 1 || busy_poll_ms < 1) {
    return absl::InvalidArgumentError("cleaner poll intervals must be >= 1 ms");
  }
  return absl::OkStatus();
}

Cleaner::Cleaner(const CleanerOptions& options, const ChunkIndex* index, const DramAllocator* dram,
                 Demoter* demoter, const RocksDbTier* nvme)
    : options_(options),
      index_(index),
      dram_(dram),
      demoter_(demoter),
      nvme_(nvme),
      thread_([this] { Loop(); }) {}

Cleaner::~Cleaner() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void Cleaner::Kick() {
  absl::MutexLock lock(&mu_);
  kicked_ = true;
}

CleanerCounters Cleaner::Counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

void Cleaner::Loop() {
  SetUpBackgroundThread("kvstash-clean", nvme_->options().low_priority_background);
  absl::MutexLock lock(&mu_);
  for (;;) {
    mu_.AwaitWithTimeout(absl::Condition(this, &Cleaner::Woken),
                         absl::Milliseconds(busy_ ? options_.busy_poll_ms : options_.idle_poll_ms));
    if (stopping_) return;
    kicked_ = false;
    mu_.Unlock();
    const PassResult r = Pass();
    mu_.Lock();
    ++counters_.passes;
    counters_.queued += r.queued;
    busy_ = r.queue_full;
    // Queued all it found room for: look again at once for more.
    if (r.queued > 0 && !r.queue_full) kicked_ = true;
  }
}

Cleaner::PassResult Cleaner::Pass() {
  PassResult r;
  const uint64_t capacity = dram_->capacity_bytes();
  const uint64_t window = capacity / 100 * options_.window_percent;
  if (dram_->used_bytes() + window < capacity) return r;  // DRAM not full enough yet
  std::vector<ColdEntry> cold = index_->Coldest(window, kMaxEntriesPerShard);
  std::sort(cold.begin(), cold.end(),
            [](const ColdEntry& a, const ColdEntry& b) { return a.EvictsBefore(b); });
  uint64_t seen_bytes = 0;
  for (const ColdEntry& e : cold) {
    if (seen_bytes >= window) break;
    seen_bytes += e.size_bytes;
    if (!options_.admission.Admits(e.hits, e.keep)) continue;        // to be dropped, not written
    if (nvme_->Contains(e.id) || demoter_->Pending(e.id)) continue;  // clean or on its way
    ChunkRef chunk = index_->Peek(e.id);
    if (chunk == nullptr) continue;  // evicted or deleted since the scan
    if (!demoter_->TryClean(e.id, std::move(chunk))) {
      r.queue_full = true;
      break;
    }
    ++r.queued;
  }
  return r;
}

}  // namespace kvstash::storage
