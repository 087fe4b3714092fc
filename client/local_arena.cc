#include "client/local_arena.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/arena_view.h"
#include "client/local_arena_state.h"
#include "client/messages.h"
#include "common/unix_socket.h"
#include "proto/local_wire.h"

namespace kvstash::client_internal {
namespace {

using wire::local::FrameHeader;
using LocalOp = wire::local::Op;

constexpr absl::Duration kRetryAfterFailure = absl::Seconds(1);
constexpr absl::Duration kRetryAfterRefusal = absl::Minutes(1);
// How often idle connections are checked for the daemon's hang-up.
constexpr absl::Duration kWatchInterval = absl::Seconds(1);

// The reply to request `id` of `op`: its body.
absl::StatusOr<std::string> RecvReply(int fd, LocalOp op, uint64_t id, absl::Time deadline,
                                      int* passed) {
  FrameHeader h;
  absl::Status s = RecvAll(fd, &h, sizeof(h), deadline, wire::local::kSpinMicros, passed);
  if (!s.ok()) return s;
  if (s = wire::local::CheckFrameHeader(h); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("local arena socket: ", s.message()));
  }
  if (h.op != static_cast<uint8_t>(op) || h.request_id != id) {
    return absl::UnavailableError("local arena socket: a reply to another request");
  }
  std::string body(h.body_bytes, '\0');
  s = RecvAll(fd, body.data(), body.size(), deadline, wire::local::kSpinMicros, passed);
  if (!s.ok()) return s;
  return body;
}

}  // namespace

LocalArena::LocalArena(std::string path, std::string token, int copy_threads)
    : path_(std::move(path)),
      token_(std::move(token)),
      copier_(ParallelCopier::Options{copy_threads}),
      watcher_(&LocalArena::Watch, this) {}

LocalArena::~LocalArena() {
  stop_.Notify();
  watcher_.join();
}

absl::Status LocalArena::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

std::unique_ptr<LocalArena::Connection> LocalArena::Take(absl::Time deadline) {
  std::unique_ptr<Connection> conn;
  bool open = false;
  {
    absl::MutexLock lock(&mu_);
    const auto ready = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return !idle_.empty() || open_ + opening_ < kMaxConnections;
    };
    if (!mu_.AwaitWithDeadline(absl::Condition(&ready), deadline)) return nullptr;
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
    open = absl::Now() >= retry_after_;
    if (open) ++opening_;
  }
  if (!open) return nullptr;
  absl::StatusOr<std::unique_ptr<Connection>> opened = Open(deadline);
  absl::MutexLock lock(&mu_);
  --opening_;
  if (!opened.ok()) {
    const absl::Status& s = opened.status();
    const bool refused =
        absl::IsPermissionDenied(s) || absl::IsUnauthenticated(s) || absl::IsFailedPrecondition(s);
    retry_after_ = absl::Now() + (refused ? kRetryAfterRefusal : kRetryAfterFailure);
    last_error_ = s;
    return nullptr;
  }
  ++open_;
  return *std::move(opened);
}

void LocalArena::Give(std::unique_ptr<Connection> conn) {
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(conn));
}

void LocalArena::Discard(std::unique_ptr<Connection> conn) {
  std::unique_ptr<Connection> closed = std::move(conn);  // closed (maybe unmapped) unlocked
  absl::MutexLock lock(&mu_);
  --open_;
}

void LocalArena::Broke(std::unique_ptr<Connection> conn, absl::Status why) {
  // Closed, and the old mapping unmapped, after the lock is released.
  std::unique_ptr<Connection> closed = std::move(conn);
  std::vector<std::unique_ptr<Connection>> stale;
  std::shared_ptr<Mapping> old;
  absl::MutexLock lock(&mu_);
  stale.swap(idle_);
  open_ -= 1 + static_cast<int>(stale.size());
  // A new connection maps anew; connections in use keep their own until they finish.
  old.swap(mapping_);
  last_error_ = std::move(why);
  retry_after_ = absl::Now() + kRetryAfterFailure;
}

void LocalArena::Watch() {
  while (!stop_.WaitForNotificationWithTimeout(kWatchInterval)) {
    std::vector<std::unique_ptr<Connection>> idle;
    std::shared_ptr<Mapping> old;  // both released after the lock
    absl::MutexLock lock(&mu_);
    bool gone = false;
    for (const std::unique_ptr<Connection>& c : idle_) {
      pollfd p{c->fd, POLLIN | POLLRDHUP, 0};
      // An idle connection has nothing to read: anything there is the daemon's hang-up.
      gone = gone || poll(&p, 1, 0) != 0;
    }
    if (!gone) continue;
    idle.swap(idle_);
    open_ -= static_cast<int>(idle.size());
    old.swap(mapping_);  // the old arena's memory goes with the last mapping of it
    last_error_ = absl::UnavailableError("kvstashd closed the local arena connections");
  }
}

void LocalArena::Rounds(size_t n, const RoundFn& round, std::vector<size_t>* rest) {
  std::vector<size_t> pending(n);
  for (size_t i = 0; i < n; ++i) pending[i] = i;
  // The daemon answers OVER_BUDGET past what one connection may hold; once the first part
  // of a large batch is released or committed, the next round takes more of it.
  while (!pending.empty()) {
    std::vector<size_t> over;
    const absl::StatusOr<bool> moved_any = round(pending, &over, rest);
    if (!moved_any.ok()) {
      rest->insert(rest->end(), pending.begin(), pending.end());
      return;
    }
    if (!*moved_any) {
      rest->insert(rest->end(), over.begin(), over.end());
      return;
    }
    pending = std::move(over);
  }
}

void LocalArena::Get(absl::Time deadline, const Key128& ns, absl::Span<GetItem> items,
                     uint64_t lease_id, std::vector<size_t>* rest) {
  Rounds(
      items.size(),
      [&](const std::vector<size_t>& which, std::vector<size_t>* over, std::vector<size_t>* out) {
        absl::StatusOr<bool> mapped = Round(deadline, ns, items, which, lease_id, over, out);
        lease_id = 0;  // released for every key of the first round
        return mapped;
      },
      rest);
}

void LocalArena::Put(absl::Time deadline, const Key128& ns, absl::Span<PutItem> items,
                     absl::Span<const uint64_t> checksums, std::vector<size_t>* rest) {
  Rounds(
      items.size(),
      [&](const std::vector<size_t>& which, std::vector<size_t>* over, std::vector<size_t>* out) {
        return PutRound(deadline, ns, items, checksums, which, over, out);
      },
      rest);
}

absl::StatusOr<std::string> LocalArena::Exchange(std::unique_ptr<Connection>* conn, LocalOp op,
                                                 uint64_t id, absl::string_view body,
                                                 absl::Time deadline) {
  absl::Status s = SendWithFd((*conn)->fd, wire::local::EncodeFrame(op, id, body), -1);
  absl::StatusOr<std::string> reply =
      s.ok() ? RecvReply((*conn)->fd, op, id, deadline, nullptr) : s;
  if (reply.ok()) return reply;
  // A late reply may still come: this connection is out of step, the others are fine.
  if (absl::IsDeadlineExceeded(reply.status())) {
    Discard(std::move(*conn));
  } else {
    Broke(std::move(*conn), reply.status());
  }
  return reply.status();
}

absl::StatusOr<bool> LocalArena::Round(absl::Time deadline, const Key128& ns,
                                       absl::Span<GetItem> items, const std::vector<size_t>& which,
                                       uint64_t lease_id, std::vector<size_t>* over,
                                       std::vector<size_t>* rest) {
  if (which.size() > wire::local::kMaxGetItems) {
    return absl::InvalidArgumentError("a batch too large for one local arena request");
  }
  if (absl::Now() >= deadline) return absl::DeadlineExceededError("no time left");
  std::vector<wire::ucx::GetItemRecord> records(which.size());
  for (size_t k = 0; k < which.size(); ++k) {
    std::memcpy(records[k].key, items[which[k]].key.data(), sizeof(records[k].key));
    records[k].capacity = items[which[k]].capacity;
  }
  wire::local::GetFields fields{};
  std::memcpy(fields.namespace_id, ns.data(), sizeof(fields.namespace_id));
  fields.lease_id = lease_id;
  std::unique_ptr<Connection> conn = Take(deadline);
  if (conn == nullptr) return absl::UnavailableError("no local arena connection");
  const uint64_t id = next_request_id_.fetch_add(1);
  absl::StatusOr<std::string> reply =
      Exchange(&conn, LocalOp::kGet, id, wire::local::EncodeGet(fields, records), deadline);
  if (!reply.ok()) return reply.status();
  bool held = false;
  absl::Status call;
  const size_t first_rest = rest->size();
  absl::Status s = Apply(*conn->mapping, *reply, items, which, over, rest, &held, &call);
  // Closing the connection releases what it holds, so a malformed reply needs no Release.
  if (held && s.ok()) {
    s = SendWithFd(conn->fd, wire::local::EncodeFrame(LocalOp::kRelease, id, ""), -1);
  }
  if (!s.ok()) {
    Broke(std::move(conn), s);
    over->clear();
    rest->resize(first_rest);  // the caller sends all of `which` through gRPC
    for (size_t i : which) items[i].status = absl::UnavailableError("not answered");
    return s;
  }
  Give(std::move(conn));
  // A call refused as a whole (a right, a limit, draining): gRPC gets the same answer.
  if (!call.ok()) {
    rest->resize(first_rest);
    return call;
  }
  return held;
}

absl::Status LocalArena::Apply(const Mapping& mapping, absl::string_view reply,
                               absl::Span<GetItem> items, const std::vector<size_t>& which,
                               std::vector<size_t>* over, std::vector<size_t>* rest, bool* held,
                               absl::Status* call) {
  bool runs_ok = true;
  std::vector<ParallelCopier::Range> copies;
  std::vector<size_t> copied;  // indexes into items, OK once their copies ran
  absl::Status s = wire::local::ParseGetReply(
      reply, static_cast<uint32_t>(which.size()),
      [&](uint32_t k, const wire::local::ItemReply& r, absl::string_view runs) {
        GetItem& item = items[which[k]];
        if (r.code == wire::local::kNotMapped) {
          rest->push_back(which[k]);
        } else if (r.code == wire::local::kOverBudget) {
          over->push_back(which[k]);
        } else if (wire::local::IsErrorCode(r.code)) {
          item.status = GetChunkError(item.key, r.code, "");
        } else if (r.code == wire::local::kTooLarge) {
          AcceptGetChunk(ChunkMeta{r.size_bytes, r.tokens, r.format, r.checksum}, &item);
        } else if (r.code != 0) {
          runs_ok = false;
        } else {
          *held = true;
          const size_t planned = copies.size();
          runs_ok = runs_ok && PlanCopy(mapping, r, runs, &item, &copies);
          if (copies.size() > planned) copied.push_back(which[k]);
        }
      },
      call);
  if (s.ok() && !runs_ok) {
    s = absl::InternalError("kvstashd named arena bytes that do not match the chunk");
  }
  if (!s.ok()) return s;
  // One batch, so the copy threads share small chunks too.
  copier_.CopyAll(copies, /*streaming=*/false);
  for (size_t i : copied) items[i].status = absl::OkStatus();
  return s;
}

bool LocalArena::PlanCopy(const Mapping& mapping, const wire::local::ItemReply& r,
                          absl::string_view runs, GetItem* item,
                          std::vector<ParallelCopier::Range>* copies) {
  if (!AcceptGetChunk(ChunkMeta{r.size_bytes, r.tokens, r.format, r.checksum}, item)) {
    return true;  // larger than its buffer: the item says so, the bytes stay
  }
  std::vector<absl::Span<uint8_t>> spans = mapping.view->Spans(runs, r.size_bytes);
  if (spans.empty()) return false;
  mapping.view->PlanReads(spans, item->data, copies);
  return true;
}

absl::StatusOr<std::unique_ptr<LocalArena::Connection>> LocalArena::Open(absl::Time deadline) {
  auto conn = std::make_unique<Connection>();
  conn->fd = ConnectUnix(path_);
  if (conn->fd < 0) {
    return absl::UnavailableError(absl::StrCat(path_, ": ", ConnectUnixError(errno)));
  }
  (void)fcntl(conn->fd, F_SETFL, fcntl(conn->fd, F_GETFL) & ~O_NONBLOCK);
  if (absl::Status sent =
          SendWithFd(conn->fd, wire::local::EncodeFrame(LocalOp::kHello, 0, token_), -1);
      !sent.ok()) {
    return sent;
  }
  int passed = -1;
  absl::StatusOr<std::string> body = RecvReply(conn->fd, LocalOp::kHello, 0, deadline, &passed);
  wire::local::HelloReply hello{};
  absl::Status status = body.ok() ? wire::local::ParseHelloReply(*body, &hello) : body.status();
  if (status.ok() && passed < 0) {
    status = absl::UnavailableError("kvstashd's Hello reply came without the arena");
  }
  if (status.ok()) {
    absl::MutexLock lock(&mu_);
    if (mapping_ != nullptr && mapping_->id == hello.arena_id &&
        mapping_->bytes == hello.arena_bytes) {
      conn->mapping = mapping_;
    }
  }
  std::shared_ptr<Mapping> unused;
  if (status.ok() && conn->mapping == nullptr) {
    // A descriptor that only reads (an older daemon's) maps for Gets alone.
    bool writable = true;
    void* map = mmap(nullptr, hello.arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, passed,
                     static_cast<off_t>(hello.file_offset));
    if (map == MAP_FAILED && errno == EACCES) {
      writable = false;
      map = mmap(nullptr, hello.arena_bytes, PROT_READ, MAP_SHARED, passed,
                 static_cast<off_t>(hello.file_offset));
    }
    if (map == MAP_FAILED) {
      status = absl::UnavailableError(absl::StrCat(
          "cannot map kvstashd's arena (", hello.arena_bytes, " bytes): ", strerror(errno)));
    } else {
      auto mapping = std::make_shared<Mapping>();
      mapping->map = map;
      mapping->bytes = hello.arena_bytes;
      mapping->id = hello.arena_id;
      mapping->writable = writable;
      mapping->view = std::make_unique<ArenaView>(static_cast<uint8_t*>(map), hello.arena_bytes);
      absl::MutexLock lock(&mu_);
      // Another connection opened at the same time may have mapped this arena first.
      if (mapping_ == nullptr || mapping_->id != hello.arena_id ||
          mapping_->bytes != hello.arena_bytes) {
        mapping_ = mapping;
      }
      conn->mapping = mapping_;
      unused.swap(mapping);  // unmapped (when not kept) after the lock
    }
  }
  if (passed >= 0) close(passed);  // the mapping keeps the file
  if (!status.ok()) return status;
  return conn;
}

}  // namespace kvstash::client_internal
