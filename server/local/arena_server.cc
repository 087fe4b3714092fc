#include "server/local/arena_server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "common/unix_socket.h"
#include "proto/local_wire.h"
#include "server/arena_runs.h"
#include "server/local/arena_connection.h"

namespace kvstash::server {
namespace {

using wire::local::FrameHeader;
using LocalOp = wire::local::Op;
using wire::local::ItemReply;

// All connections together hold or reserve at most 1/kArenaShareHeld of the arena (each
// at most DirectBudget): the rest stays free for other puts and eviction.
constexpr uint64_t kArenaShareHeld = 2;

}  // namespace

absl::StatusOr<std::unique_ptr<ArenaServer>> ArenaServer::Start(const std::string& path,
                                                                const ServiceEnv* env,
                                                                TransportMetrics* metrics,
                                                                const Arena& arena,
                                                                const Options& options) {
  std::unique_ptr<ArenaServer> server(new ArenaServer(env, metrics, arena, options));
  LocalListener::Options listen;
  listen.send_buffer_bytes = 0;  // small messages: the kernel's default serves them
  absl::StatusOr<std::unique_ptr<LocalListener>> listener = LocalListener::Start(
      path, [s = server.get()](int fd) { s->Accept(fd); }, listen);
  if (!listener.ok()) return listener.status();
  server->listener_ = *std::move(listener);
  return server;
}

ArenaServer::ArenaServer(const ServiceEnv* env, TransportMetrics* metrics, const Arena& arena,
                         const Options& options)
    : requests_(env, metrics, ""), arena_(arena), options_(options) {}

ArenaServer::~ArenaServer() {
  Stop();
  close(arena_.fd);
}

void ArenaServer::StopAccepting() {
  if (listener_ != nullptr) listener_->Stop();  // no Accept runs after this
}

void ArenaServer::Stop() {
  StopAccepting();
  std::list<std::unique_ptr<Connection>> connections;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    connections.swap(connections_);
  }
  for (const auto& c : connections) shutdown(c->fd, SHUT_RDWR);  // wakes a blocked read
  connections.clear();                                           // joins each thread
}

void ArenaServer::Accept(int fd) {
  std::list<std::unique_ptr<Connection>> finished;
  absl::MutexLock lock(&mu_);
  for (auto it = connections_.begin(); it != connections_.end();) {
    auto next = std::next(it);
    if ((*it)->done.load()) finished.splice(finished.end(), connections_, it);
    it = next;
  }
  if (stopped_ || connections_.size() >= static_cast<size_t>(options_.max_connections)) {
    close(fd);
    return;
  }
  // The connection's thread waits in poll, then reads what arrived.
  (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  auto conn = std::make_unique<Connection>(fd);
  try {
    conn->thread = std::thread(&ArenaServer::Serve, this, conn.get());
  } catch (const std::system_error&) {
    return;  // out of threads: the connection is closed, the daemon goes on
  }
  connections_.push_back(std::move(conn));
}

void ArenaServer::Serve(Connection* conn) {
  const absl::Time hello_by = absl::Now() + absl::Milliseconds(options_.hello_timeout_ms);
  for (;;) {
    // A client may wait as long as it likes between requests, once it said Hello.
    const absl::Time deadline = conn->greeted ? absl::InfiniteFuture() : hello_by;
    FrameHeader h;
    if (!RecvAll(conn->fd, &h, sizeof(h), deadline, wire::local::kSpinMicros, nullptr).ok()) {
      break;
    }
    absl::Status s = wire::local::CheckFrameHeader(h);
    // Before Hello nobody is known: no more than a token is read.
    if (s.ok() && !conn->greeted && h.body_bytes > wire::ucx::kMaxTokenBytes) {
      s = absl::InvalidArgumentError("a message before Hello larger than a token");
    }
    if (!s.ok()) {
      requests_.LogRefused(Op::kGet, s, "local arena");
      break;
    }
    std::string body(h.body_bytes, '\0');
    if (!RecvAll(conn->fd, body.data(), body.size(), deadline, wire::local::kSpinMicros, nullptr)
             .ok()) {
      break;
    }
    if (!Dispatch(conn, h.op, h.request_id, body)) break;
  }
  while (!conn->holds.empty()) Release(conn, conn->holds.begin()->first);
  for (auto& [id, put] : conn->reservations) {
    for (const PutChunk& c : put.chunks) Uncharge(conn, c.pending()->meta().size_bytes);
  }
  conn->reservations.clear();  // the chunks never written leave no trace
  shutdown(conn->fd, SHUT_RDWR);
  conn->done.store(true);
}

bool ArenaServer::Dispatch(Connection* conn, uint8_t op, uint64_t request_id,
                           absl::string_view body) {
  switch (static_cast<LocalOp>(op)) {
    case LocalOp::kHello:
      return Hello(conn, request_id, body);
    case LocalOp::kGet:
      return Get(conn, request_id, body);
    case LocalOp::kRelease:
      Release(conn, request_id);
      return conn->greeted;  // nothing else before Hello
    case LocalOp::kPut:
      return Put(conn, request_id, body);
    case LocalOp::kCommit:
      return Commit(conn, request_id);
  }
  return false;
}

bool ArenaServer::Hello(Connection* conn, uint64_t request_id, absl::string_view token) {
  absl::Status s;
  absl::StatusOr<auth::PrincipalPtr> principal = requests_.Principal(token);
  if (conn->greeted) {
    s = absl::FailedPreconditionError("a second Hello on one local arena connection");
  } else if (!principal.ok()) {
    s = principal.status();
  } else if (!Requests::MayMapArena(CallAuth{*principal, nullptr})) {
    s = absl::PermissionDeniedError(
        absl::StrCat("principal \"", (*principal)->name,
                     "\" may not map the daemon's arena (`trusted: true` in the token file, "
                     "docs/security.md); read through gRPC instead"));
  }
  const wire::local::HelloReply fields{0, 0, arena_.size, arena_.file_offset, arena_.id};
  const std::string reply = wire::local::EncodeFrame(LocalOp::kHello, request_id,
                                                     wire::local::EncodeHelloReply(s, fields));
  if (!SendWithFd(conn->fd, reply, s.ok() ? arena_.fd : -1).ok() || !s.ok()) return false;
  conn->greeted = true;
  conn->token = std::string(token);
  return true;
}

bool ArenaServer::Get(Connection* conn, uint64_t request_id, absl::string_view body) {
  const TransportMetrics::Clock::time_point start = TransportMetrics::Clock::now();
  requests_.metrics().AddReceivedBytes(sizeof(FrameHeader) + body.size());
  wire::local::GetFields fields{};
  absl::string_view records;
  absl::Status s =
      conn->greeted ? requests_.Admit() : absl::FailedPreconditionError("Get before Hello");
  if (s.ok()) s = wire::local::ParseGet(body, &fields, &records);
  absl::StatusOr<CallAuth> caller = absl::UnknownError("");
  if (s.ok()) {
    caller = requests_.Authenticate(Op::kGet, conn->token);
    s = caller.status();
  }
  absl::StatusOr<std::shared_ptr<ActiveGet>> call = absl::UnknownError("");
  if (s.ok()) {
    const absl::string_view ns(reinterpret_cast<const char*>(fields.namespace_id),
                               sizeof(fields.namespace_id));
    call = requests_.BeginGet(*caller, ns, fields.count, fields.lease_id, start);
    s = call.status();
  }
  std::string reply;
  if (s.ok()) {
    reply = ServeGet(conn, request_id, **call, records);
  } else {
    requests_.LogRefused(Op::kGet, s, "local arena");
    requests_.RecordCall(Op::kGet, s.code(), start);
    reply = wire::local::EncodeCallError(s);
  }
  return Send(conn, LocalOp::kGet, request_id, reply) && conn->greeted;
}

bool ArenaServer::Send(Connection* conn, LocalOp op, uint64_t request_id, absl::string_view body) {
  requests_.metrics().AddSentBytes(sizeof(FrameHeader) + body.size());
  return SendWithFd(conn->fd, wire::local::EncodeFrame(op, request_id, body), -1).ok();
}

std::string ArenaServer::ServeGet(Connection* conn, uint64_t request_id, ActiveGet& call,
                                  absl::string_view records) {
  const size_t count = records.size() / sizeof(wire::ucx::GetItemRecord);
  std::vector<wire::ucx::GetItemRecord> items(count);
  std::memcpy(items.data(), records.data(), records.size());
  std::vector<absl::StatusOr<storage::ChunkRef>> fetched(count, absl::UnknownError(""));
  absl::BlockingCounter left(static_cast<int>(count));
  for (size_t i = 0; i < count; ++i) {
    Key128 key;
    std::memcpy(key.data(), items[i].key, key.size());
    call.Fetch(key, [&fetched, &left, i](absl::StatusOr<storage::ChunkRef> ref) {
      fetched[i] = std::move(ref);
      left.DecrementCount();
    });
  }
  left.Wait();
  std::string body = wire::local::EncodeCallReply(static_cast<uint32_t>(count));
  for (size_t i = 0; i < count; ++i) {
    // What the items after this one need at least, so the reply stays within the limit.
    const size_t later = (count - i - 1) * sizeof(ItemReply);
    std::string runs;
    const ItemReply r = Answer(conn, request_id, call, items[i].capacity, std::move(fetched[i]),
                               wire::local::kMaxBodyBytes - body.size() - later, &runs);
    wire::local::AppendItem(r, runs, &body);
  }
  call.End(absl::StatusCode::kOk);
  return body;
}

ItemReply ArenaServer::Answer(Connection* conn, uint64_t request_id, const ActiveGet& call,
                              uint64_t capacity, absl::StatusOr<storage::ChunkRef> fetched,
                              size_t room, std::string* runs) {
  if (!fetched.ok()) return ItemReply{static_cast<int32_t>(fetched.status().code())};
  const storage::ChunkRef& ref = *fetched;
  const storage::ChunkMeta& meta = ref->meta();
  ItemReply r{0, 0, meta.size_bytes, ref->checksum(), meta.tokens, meta.format};
  if (meta.size_bytes > capacity) {
    r.code = wire::local::kTooLarge;
    return r;
  }
  *runs = ArenaRuns(arena_.data, arena_.size, ref->segments());
  if (runs->empty()) {  // not in the arena (NVMe): read it otherwise
    r.code = wire::local::kNotMapped;
    return r;
  }
  // Only chunks served here are charged to the caller's byte rate.
  const uint64_t size = meta.size_bytes;
  if (runs->size() + sizeof(ItemReply) > room || !Charge(conn, size)) {
    runs->clear();
    r.code = wire::local::kOverBudget;
    return r;
  }
  if (absl::StatusOr<storage::ChunkRef> charged = call.Serve(ref); !charged.ok()) {
    Uncharge(conn, size);
    runs->clear();
    return ItemReply{static_cast<int32_t>(charged.status().code())};
  }
  r.run_count = static_cast<uint32_t>(runs->size() / sizeof(wire::ucx::ArenaRun));
  conn->holds[request_id].push_back(ref);
  requests_.metrics().AddDirectBytes(false, size);
  return r;
}

bool ArenaServer::Charge(Connection* conn, uint64_t size) {
  if (conn->held + size > DirectBudget(arena_.size)) return false;
  // Taken before the check, so concurrent connections cannot all pass the cap.
  if (held_bytes_.fetch_add(size) + size > arena_.size / kArenaShareHeld) {
    held_bytes_ -= size;
    return false;
  }
  conn->held += size;
  return true;
}

void ArenaServer::Uncharge(Connection* conn, uint64_t size) {
  conn->held -= size;
  held_bytes_ -= size;
}

void ArenaServer::Release(Connection* conn, uint64_t request_id) {
  auto it = conn->holds.find(request_id);
  if (it == conn->holds.end()) return;  // released already, or nothing held: no reply either way
  for (const storage::ChunkRef& c : it->second) Uncharge(conn, c->meta().size_bytes);
  conn->holds.erase(it);
}

}  // namespace kvstash::server
