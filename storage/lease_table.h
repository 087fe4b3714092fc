// LeaseTable: which chunks each Lookup lease protects, and until when.
//
// The table only records holds; the protection itself is a per-entry lease count in the
// index, which the store raises when it takes a lease and lowers for every hold this table
// gives back (Release, TakeExpired). Each hold names the entry generation it counted on, so
// a hold on a chunk that was deleted and put again never lowers the new entry's count.
// Expiry is lazy: the store calls TakeExpired from Lookup and before evicting, so no thread
// is needed.
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/chunk.h"

namespace kvstash::storage {

class LeaseTable {
 public:
  struct Hold {
    ChunkId id;
    uint64_t generation = 0;  // of the index entry whose lease count was raised
  };

  // Records a lease over `holds` that lapses at `deadline`; returns its id (never 0).
  uint64_t Add(absl::Time deadline, std::vector<Hold> holds);
  // Removes one hold of `lease_id` on `id`. nullopt if the lease or hold is gone (released
  // before, expired, or never taken): the caller then has nothing to undo.
  std::optional<Hold> Release(uint64_t lease_id, const ChunkId& id);
  // Removes every lease whose deadline is <= now and returns its remaining holds. Cheap
  // (no lock) while no lease is due.
  std::vector<Hold> TakeExpired(absl::Time now);

  size_t active_leases() const;

 private:
  struct Lease {
    absl::Time deadline;
    std::vector<Hold> holds;
  };
  using Due = std::pair<absl::Time, uint64_t>;  // (deadline, lease id)

  void UpdateNextDeadline() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Lease> leases_ ABSL_GUARDED_BY(mu_);
  // Min-heap of deadlines; entries of leases already gone are skipped when popped.
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Earliest deadline in due_ (absl::ToUnixNanos), read without the lock as a hint.
  std::atomic<int64_t> next_deadline_ns_{INT64_MAX};
};

}  // namespace kvstash::storage
