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
#include "client/messages.h"
#include "common/unix_socket.h"
#include "proto/local_wire.h"

namespace kvstash::client_internal {
namespace {

using wire::local::FrameHeader;
using LocalOp = wire::local::Op;

constexpr absl::Duration kRetryAfterFailure = absl::Seconds(1);
constexpr absl::Duration kRetryAfterRefusal = absl::Minutes(1);

// Reads exactly `n` bytes by `deadline`; a descriptor passed with them goes to `*passed`
// (the first one; later ones are closed).
absl::Status RecvExact(int fd, void* data, size_t n, absl::Time deadline, int* passed) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left_ms <= 0) return absl::DeadlineExceededError("the local arena socket did not answer");
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left_ms, 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline check above ends it
    int got_fd = -1;
    const long got = RecvWithFd(fd, p, n, &got_fd);
    if (got_fd >= 0) {
      if (passed != nullptr && *passed < 0) {
        *passed = got_fd;
      } else {
        close(got_fd);
      }
    }
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return absl::UnavailableError("kvstashd closed the local arena socket");
    p += got;
    n -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

// One reply frame of `op`: its body.
absl::StatusOr<std::string> RecvReply(int fd, LocalOp op, absl::Time deadline, int* passed) {
  FrameHeader h;
  if (absl::Status s = RecvExact(fd, &h, sizeof(h), deadline, passed); !s.ok()) return s;
  if (absl::Status s = wire::local::CheckFrameHeader(h); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("local arena socket: ", s.message()));
  }
  if (h.op != static_cast<uint8_t>(op)) {
    return absl::UnavailableError("local arena socket: a reply to another request");
  }
  std::string body(h.body_bytes, '\0');
  if (absl::Status s = RecvExact(fd, body.data(), body.size(), deadline, passed); !s.ok()) {
    return s;
  }
  return body;
}

}  // namespace

struct LocalArena::Session {
  ~Session() {
    view.reset();
    if (map != nullptr) munmap(map, map_bytes);
    if (fd >= 0) close(fd);
  }
  int fd = -1;
  void* map = nullptr;
  size_t map_bytes = 0;
  std::unique_ptr<ArenaView> view;
  absl::Mutex io;  // one request and its reply at a time

  // Connects, presents `token` and maps the arena the daemon hands over.
  absl::Status Open(const std::string& path, const std::string& token, absl::Time deadline);
};

LocalArena::LocalArena(std::string path, std::string token, int copy_threads)
    : path_(std::move(path)),
      token_(std::move(token)),
      copier_(ParallelCopier::Options{copy_threads}) {}

LocalArena::~LocalArena() = default;

absl::Status LocalArena::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

std::shared_ptr<LocalArena::Session> LocalArena::Current(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (session_ != nullptr || absl::Now() < retry_after_) return session_;
  auto session = std::make_shared<Session>();
  absl::Status s = session->Open(path_, token_, deadline);
  last_error_ = s;
  if (!s.ok()) {
    const bool refused =
        absl::IsPermissionDenied(s) || absl::IsUnauthenticated(s) || absl::IsFailedPrecondition(s);
    retry_after_ = absl::Now() + (refused ? kRetryAfterRefusal : kRetryAfterFailure);
    return nullptr;
  }
  session_ = std::move(session);
  return session_;
}

void LocalArena::Drop(const std::shared_ptr<Session>& session, absl::Status why) {
  absl::MutexLock lock(&mu_);
  if (session_ != session) return;
  session_.reset();
  last_error_ = std::move(why);
  retry_after_ = absl::Now() + kRetryAfterFailure;
}

void LocalArena::Get(absl::Time deadline, const Key128& ns, absl::Span<GetItem> items,
                     uint64_t lease_id, std::vector<size_t>* rest) {
  const auto all_rest = [&] {
    for (size_t i = 0; i < items.size(); ++i) rest->push_back(i);
  };
  std::shared_ptr<Session> session = Current(deadline);
  if (session == nullptr) return all_rest();
  std::vector<wire::ucx::GetItemRecord> records(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    std::memcpy(records[i].key, items[i].key.data(), sizeof(records[i].key));
    records[i].capacity = items[i].capacity;
  }
  wire::local::GetFields fields{};
  std::memcpy(fields.namespace_id, ns.data(), sizeof(fields.namespace_id));
  fields.lease_id = lease_id;
  const uint64_t id = next_request_id_.fetch_add(1);
  const std::string request =
      wire::local::EncodeFrame(LocalOp::kGet, id, wire::local::EncodeGet(fields, records));
  absl::StatusOr<std::string> reply;
  {
    absl::MutexLock lock(&session->io);
    absl::Status sent = SendWithFd(session->fd, request, -1);
    reply = sent.ok() ? RecvReply(session->fd, LocalOp::kGet, deadline, nullptr) : sent;
  }
  if (!reply.ok()) {
    Drop(session, reply.status());
    return all_rest();
  }
  const size_t first_rest = rest->size();
  bool held = false;
  const bool ok = Apply(*session, *reply, items, rest, &held);
  if (held) {
    absl::MutexLock lock(&session->io);
    if (absl::Status s =
            SendWithFd(session->fd, wire::local::EncodeFrame(LocalOp::kRelease, id, ""), -1);
        !s.ok()) {
      Drop(session, s);
    }
  }
  if (!ok) {
    Drop(session, absl::UnavailableError("kvstashd sent a malformed local arena reply"));
    rest->resize(first_rest);
    ResetGetResults(items);
    all_rest();
  }
}

bool LocalArena::Apply(Session& session, absl::string_view reply, absl::Span<GetItem> items,
                       std::vector<size_t>* rest, bool* held) {
  bool runs_ok = true;
  absl::Status s = wire::local::ParseGetReply(
      reply, static_cast<uint32_t>(items.size()),
      [&](uint32_t i, const wire::local::ItemReply& r, absl::string_view runs) {
        GetItem& item = items[i];
        if (r.code == wire::local::kNotMapped) {
          rest->push_back(i);
          return;
        }
        if (r.code > 0) {
          item.status = GetChunkError(item.key, r.code, "");
          return;
        }
        if (r.code != 0 && r.code != wire::local::kTooLarge) {
          runs_ok = false;
          return;
        }
        *held = *held || r.code == 0;
        if (!AcceptGetChunk(ChunkMeta{r.size_bytes, r.tokens, r.format, r.checksum}, &item) ||
            r.code != 0 || !runs_ok) {
          return;
        }
        std::vector<absl::Span<uint8_t>> spans = session.view->Spans(runs, r.size_bytes);
        if (spans.empty() && r.size_bytes > 0) {
          runs_ok = false;
          return;
        }
        auto* dst = static_cast<uint8_t*>(item.data);
        for (absl::Span<uint8_t> span : spans) {
          session.view->MapForCopy(span);
          copier_.Copy(dst, span.data(), span.size(), /*streaming=*/false);
          dst += span.size();
        }
        item.status = absl::OkStatus();
      });
  if (!s.ok() && !absl::IsInternal(s)) {
    // The whole call was refused (a right, a limit, draining): gRPC gets the same answer.
    for (size_t i = 0; i < items.size(); ++i) rest->push_back(i);
    return true;
  }
  return s.ok() && runs_ok;
}

absl::Status LocalArena::Session::Open(const std::string& path, const std::string& token,
                                       absl::Time deadline) {
  Session* s = this;
  s->fd = ConnectUnix(path);
  if (s->fd < 0) {
    return absl::UnavailableError(absl::StrCat(path, ": ", ConnectUnixError(errno)));
  }
  (void)fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_NONBLOCK);
  if (absl::Status sent =
          SendWithFd(s->fd, wire::local::EncodeFrame(LocalOp::kHello, 0, token), -1);
      !sent.ok()) {
    return sent;
  }
  int passed = -1;
  absl::StatusOr<std::string> body = RecvReply(s->fd, LocalOp::kHello, deadline, &passed);
  wire::local::HelloReply hello{};
  absl::Status status = body.ok() ? wire::local::ParseHelloReply(*body, &hello) : body.status();
  if (status.ok() && passed < 0) {
    status = absl::UnavailableError("kvstashd's Hello reply came without the arena");
  }
  if (status.ok()) {
    void* map = mmap(nullptr, hello.arena_bytes, PROT_READ, MAP_SHARED, passed,
                     static_cast<off_t>(hello.file_offset));
    if (map == MAP_FAILED) {
      status = absl::UnavailableError(absl::StrCat(
          "cannot map kvstashd's arena (", hello.arena_bytes, " bytes): ", strerror(errno)));
    } else {
      s->map = map;
      s->map_bytes = hello.arena_bytes;
      s->view = std::make_unique<ArenaView>(static_cast<uint8_t*>(map), hello.arena_bytes);
    }
  }
  if (passed >= 0) close(passed);  // the mapping keeps the file
  return status;
}

}  // namespace kvstash::client_internal
