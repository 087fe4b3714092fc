// LocalArena: a unix:// client's reads and writes straight from and into the daemon's DRAM
// arena, through the local arena socket beside the gRPC socket (proto/local_wire.h,
// docs/protocol.md "Local arena"). The daemon hands a trusted principal the arena as a
// descriptor; each Get is one request naming where every chunk lies, one copy per byte
// into the caller's buffer, and a Release; each Put is one request reserving every chunk,
// one copy per byte from the caller's buffer, and a Commit. What the arena cannot take or
// answer (chunks on NVMe, over the connection's budget) is left for gRPC, and so is
// everything while no connection can be
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
#include <functional>
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

  // Writes the items of namespace `ns` it can into the arena (their status and
  // already_present set, as a gRPC Put would; `checksums[i]` as it sends them) and appends
  // to `*rest` the indices of those to send another way: all of them when no connection
  // can be had or it broke.
  void Put(absl::Time deadline, const Key128& ns, absl::Span<PutItem> items,
           absl::Span<const uint64_t> checksums, std::vector<size_t>* rest);

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
  // One round of a batch: the indices it names, where it appends those over the budget
  // and those to send another way; whether it moved anything, or why the whole round went
  // nowhere (all of its indices are then the caller's to send elsewhere).
  using RoundFn = std::function<absl::StatusOr<bool>(
      const std::vector<size_t>& which, std::vector<size_t>* over, std::vector<size_t>* rest)>;
  // Runs rounds over indices 0..n-1, each asking again for what the last was over budget
  // on, until it moved nothing; appends to `*rest` what is left.
  static void Rounds(size_t n, const RoundFn& round, std::vector<size_t>* rest);
  // Sends request `id` of `op` on `*conn` and returns the reply's body. On failure `*conn`
  // is closed (Discard after a timeout, Broke otherwise) and null.
  absl::StatusOr<std::string> Exchange(std::unique_ptr<Connection>* conn, wire::local::Op op,
                                       uint64_t id, absl::string_view body, absl::Time deadline);
  // One Put request for items[which]: writes what it reserved and commits it; as Round.
  absl::StatusOr<bool> PutRound(absl::Time deadline, const Key128& ns, absl::Span<PutItem> items,
                                absl::Span<const uint64_t> checksums,
                                const std::vector<size_t>& which, std::vector<size_t>* over,
                                std::vector<size_t>* rest);
  // Applies a Put reply to items[which], writing the reserved chunks and listing their
  // positions in `*reserved`. INTERNAL for a malformed reply or runs outside the arena.
  absl::Status ApplyPut(const Mapping& mapping, absl::string_view reply, absl::Span<PutItem> items,
                        const std::vector<size_t>& which, std::vector<size_t>* over,
                        std::vector<size_t>* rest, std::vector<size_t>* reserved,
                        absl::Status* call);
  // Adds the copies of `item` into the arena bytes `runs` names to `*copies`; false when
  // they do not fit it.
  bool PlanCopyIn(const Mapping& mapping, absl::string_view runs, const PutItem& item,
                  std::vector<ParallelCopier::Range>* copies);
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
  // Adds the copies of one chunk answered with its runs into `item` to `*copies` (none
  // when the chunk is larger than its buffer); false when the runs do not fit the chunk or
  // the arena.
  bool PlanCopy(const Mapping& mapping, const wire::local::ItemReply& r, absl::string_view runs,
                GetItem* item, std::vector<ParallelCopier::Range>* copies);

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
