// LocalArena: a unix:// client's reads straight from the daemon's DRAM arena, through the
// local arena socket beside the gRPC socket (proto/local_wire.h, docs/protocol.md "Local
// arena"). The daemon hands a trusted principal the arena as a read-only descriptor; each
// Get is one request naming where every chunk lies, one copy per byte into the caller's
// buffer, and a Release. What the arena cannot answer (chunks on NVMe, over the
// connection's budget) is left for gRPC, and so is everything while no session is open:
// the daemon refused this principal, serves no arena, or went away (a new session, and a
// new mapping, is opened at most once a second after a failure, once a minute after a
// refusal).
//
// Thread-safety: thread-safe. Requests on one session go one at a time; copies run
// concurrently on the callers' threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/parallel_copy.h"
#include "kvstash/client.h"

namespace kvstash::client_internal {

class LocalArena {
 public:
  // `path`: the arena socket (ArenaSocketPath of the unix:// URI's path); `token`: the
  // bearer token to present ("" for none); `copy_threads`: ParallelCopier helpers.
  LocalArena(std::string path, std::string token, int copy_threads);
  ~LocalArena();
  LocalArena(const LocalArena&) = delete;
  LocalArena& operator=(const LocalArena&) = delete;

  // Reads the items of namespace `ns` it can from the arena (their status and out fields
  // set, as a gRPC Get would) and appends to `*rest` the indices of those to read another
  // way: all of them when no session is open or the session broke.
  void Get(absl::Time deadline, const Key128& ns, absl::Span<GetItem> items, uint64_t lease_id,
           std::vector<size_t>* rest);

  // Why the last attempt to open a session failed (OK while one is open or none was tried).
  absl::Status last_error() const;

 private:
  struct Session;
  // The open session, or a new one when due; null when none can be had now.
  std::shared_ptr<Session> Current(absl::Time deadline);
  // Forgets `session` (broken) when it is still the current one.
  void Drop(const std::shared_ptr<Session>& session, absl::Status why);
  // Copies the chunks `reply` places in the arena into `items`; false when the reply is
  // malformed or names bytes outside the arena.
  bool Apply(Session& session, absl::string_view reply, absl::Span<GetItem> items,
             std::vector<size_t>* rest, bool* held);

  const std::string path_;
  const std::string token_;
  ParallelCopier copier_;
  std::atomic<uint64_t> next_request_id_{1};
  mutable absl::Mutex mu_;
  std::shared_ptr<Session> session_ ABSL_GUARDED_BY(mu_);
  absl::Time retry_after_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::client_internal
