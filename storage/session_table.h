// SessionTable: the sessions (PutHints::session_id, per namespace) that are active, in order
// of last activity, so that idle ones are found without a scan.
//
// Memory is bounded: at most max_sessions entries (~100 bytes each); touching a new session
// past that ends the one idle longest. The table only says which sessions ended; the store
// then tells the index (ChunkIndex::EndSessions).
//
// Thread-safety: thread-safe. Never calls the index, so the index may call IsActive under
// its shard locks.
#pragma once

#include <cstdint>
#include <list>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/index.h"

namespace kvstash::storage {

class SessionTable {
 public:
  // REQUIRES: max_sessions >= 1.
  SessionTable(absl::Duration idle_timeout, size_t max_sessions);

  // Marks `session` active at `now`. Returns the sessions that ended: idle past the timeout
  // at `now`, or pushed out by max_sessions.
  std::vector<SessionKey> Touch(const SessionKey& session, absl::Time now);
  // Whether `session` is in the table (touched and not ended since; one idle past the
  // timeout counts until TakeIdle or Touch ends it, which the store then tells the index).
  bool IsActive(const SessionKey& session) const;
  // Ends `session`; false when it was not active.
  bool End(const SessionKey& session);
  // Removes and returns the sessions idle past the timeout at `now`.
  std::vector<SessionKey> TakeIdle(absl::Time now);
  // Active sessions per namespace (those idle past the timeout at `now` left out).
  absl::flat_hash_map<Key128, uint64_t> CountsByNamespace(absl::Time now) const;

 private:
  struct Active {
    SessionKey key;
    absl::Time last_active;
  };
  using List = std::list<Active>;  // front: most recently active
  void TakeIdleLocked(absl::Time now, std::vector<SessionKey>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration idle_timeout_;
  const size_t max_sessions_;
  mutable absl::Mutex mu_;
  List order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<SessionKey, List::iterator> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::storage
