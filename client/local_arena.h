// LocalArena: a unix:// client's reads straight from the daemon's DRAM arena, through the
// local arena socket beside the gRPC socket (proto/local_wire.h, docs/protocol.md "Local
// arena"). The daemon hands a trusted principal the arena as a read-only descriptor; each
// Get is one request naming where every chunk lies, one copy per byte into the caller's
// buffer, and a Release. What the arena cannot answer (chunks on NVMe, over the
// connection's budget) is left for gRPC, and so is everything while no connection can be
// had: the daemon refused this principal, serves no arena, or went away (a new connection,
// and a new mapping, is tried at most once a second after a failure, once a minute after
// a refusal).
//
// Concurrent Gets use connections of their own (up to kMaxConnections, each served by a
// daemon thread), which share one mapping of the arena while the daemon's `arena_id`
// stays the same.
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/parallel_copy.h"
#include "kvstash/client.h"
#include "proto/local_wire.h"

namespace kvstash::client_internal {

class LocalArena {
 public:
  // Connections one client keeps to the arena socket; more concurrent Gets wait for one.
  static constexpr int kMaxConnections = 8;

  // `path`: the arena socket (ArenaSocketPath of the unix:// URI's path); `token`: the
  // bearer token to present ("" for none); `copy_threads`: ParallelCopier helpers.
  LocalArena(std::string path, std::string token, int copy_threads);
  ~LocalArena();
  LocalArena(const LocalArena&) = delete;
  LocalArena& operator=(const LocalArena&) = delete;

  // Reads the items of namespace `ns` it can from the arena (their status and out fields
  // set, as a gRPC Get would) and appends to `*rest` the indices of those to read another
  // way: all of them when no connection can be had or it broke.
  void Get(absl::Time deadline, const Key128& ns, absl::Span<GetItem> items, uint64_t lease_id,
           std::vector<size_t>* rest);

  // Why the last attempt to connect failed, or the last connection broke (OK before).
  absl::Status last_error() const;

 private:
  struct Mapping;
  struct Connection;
  // An idle connection, or a new one when one may be opened; null when none can be had now.
  std::unique_ptr<Connection> Take(absl::Time deadline);
  // A new connection, mapping the arena anew unless its arena_id is the current mapping's.
  absl::StatusOr<std::unique_ptr<Connection>> Open(absl::Time deadline);
  // Returns a working connection to the pool.
  void Give(std::unique_ptr<Connection> conn);
  // Closes `conn` alone (out of step after a timeout).
  void Discard(std::unique_ptr<Connection> conn);
  // `conn` broke (it is closed): the idle ones and the mapping are likely stale too (a
  // restarted daemon), and no new connection is tried for a second.
  void Broke(std::unique_ptr<Connection> conn, absl::Status why);
  // Every kWatchInterval: drops the idle connections once the daemon hung up on one, and
  // the mapping with them, so a restarted daemon's old arena is not kept alive here.
  void Watch();
  // One request for items[which]: copies what it maps, appends to `*over` what was over
  // the budget (a next round may map it) and to `*rest` what is not in the arena. Whether
  // anything was mapped, the call's refusal, or why the connection failed (then neither
  // list gains anything: all of `which` is the caller's to send elsewhere).
  absl::StatusOr<bool> Round(absl::Time deadline, const Key128& ns, absl::Span<GetItem> items,
                             const std::vector<size_t>& which, uint64_t lease_id,
                             std::vector<size_t>* over, std::vector<size_t>* rest);
  // Applies a Get reply to items[which]; `*held` when chunks are held for a Release,
  // `*call` the call's refusal. INTERNAL for a malformed reply or runs outside the arena.
  absl::Status Apply(const Mapping& mapping, absl::string_view reply, absl::Span<GetItem> items,
                     const std::vector<size_t>& which, std::vector<size_t>* over,
                     std::vector<size_t>* rest, bool* held, absl::Status* call);
  // Copies one chunk answered with its runs into `item`; false when they do not fit the
  // chunk or the arena.
  bool CopyOut(const Mapping& mapping, const wire::local::ItemReply& r, absl::string_view runs,
               GetItem* item);

  const std::string path_;
  const std::string token_;
  ParallelCopier copier_;
  std::atomic<uint64_t> next_request_id_{1};
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;     // connections idle or in use
  int opening_ ABSL_GUARDED_BY(mu_) = 0;  // connections being opened (not counted yet)
  std::shared_ptr<Mapping> mapping_ ABSL_GUARDED_BY(mu_);  // the newest daemon's arena
  absl::Time retry_after_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_;
  std::thread watcher_;  // Watch(); last member: starts once the rest is built
};

}  // namespace kvstash::client_internal
