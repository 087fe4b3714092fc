#include "server/ucx/ucx_requests.h"

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/grpc_service.h"
#include "server/ucx/ucx_worker.h"

namespace kvstash::server::ucx {
namespace {

using wire::ucx::ArenaRun;
using wire::ucx::GetFields;
using wire::ucx::GetItemRecord;
using wire::ucx::PutFields;
using wire::ucx::ReplyHeader;
using wire::ucx::RequestHeader;
using WireOp = wire::ucx::Op;

// One request message being served.
struct Request {
  UcxWorker* worker = nullptr;
  ConnectionPtr conn;
  RequestHeader header{};
  TransportMetrics::Clock::time_point start;

  const UcxServiceEnv& env() const { return worker->env(); }
  // The client maps the arena (Put: no payload, reserve; Get: answer with where to read).
  bool direct() const { return (header.flags & wire::ucx::kFlagDirect) != 0; }
  ReplyHeader Reply(uint32_t index) const {
    ReplyHeader r = wire::ucx::MakeReplyHeader(header.op, header.request_id);
    r.index = index;
    return r;
  }
  // Answers the whole request with `status` and records the call.
  void Fail(const absl::Status& status) const;
};

Op MetricOp(uint8_t op) {
  switch (static_cast<WireOp>(op)) {
    case WireOp::kRegisterNamespace:
      return Op::kRegisterNamespace;
    case WireOp::kLookup:
      return Op::kLookup;
    case WireOp::kExists:
      return Op::kExists;
    case WireOp::kDelete:
      return Op::kDelete;
    case WireOp::kStats:
      return Op::kStats;
    case WireOp::kPut:
      return Op::kPut;
    case WireOp::kGet:
      return Op::kGet;
    default:
      return Op::kHealth;
  }
}

void Request::Fail(const absl::Status& status) const {
  worker->SendError(conn, Reply(wire::ucx::kWholeRequest), status);
  env().metrics->RecordCall(MetricOp(header.op), static_cast<int>(status.code()), start);
}

bool IsRendezvous(const ucp_am_recv_param_t* param) {
  return (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
}

absl::StatusOr<Key128> ResolveNamespace(const Request& req) {
  const auto* id = reinterpret_cast<const char*>(req.header.namespace_id);
  return req.env().env->registry->Resolve(absl::string_view(id, 16));
}

// Starts receiving a rendezvous payload into `buffer`/`count` (contiguous bytes, or
// `count` ucp_dt_iov_t entries when `iov`); `done(status)` runs once it is complete.
// Returns the value for the AM callback.
struct Receive {
  UcxWorker* worker;
  std::function<void(ucs_status_t)> done;
};

void OnReceived(void* request, ucs_status_t status, size_t, void* user_data) {
  std::unique_ptr<Receive> r(static_cast<Receive*>(user_data));
  r->worker->OpEnded();
  r->done(status);
  ucp_request_free(request);
}

ucs_status_t StartReceive(UcxWorker* worker, void* desc, void* buffer, size_t count, bool iov,
                          std::function<void(ucs_status_t)> done) {
  auto r = std::make_unique<Receive>(Receive{worker, std::move(done)});
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.recv_am = &OnReceived;
  param.user_data = r.get();
  if (iov) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_iov();
  }
  void* request = ucp_am_recv_data_nbx(worker->handle(), desc, buffer, count, &param);
  if (request == nullptr) {
    r->done(UCS_OK);
  } else if (UCS_PTR_IS_ERR(request)) {
    r->done(UCS_PTR_STATUS(request));
  } else {
    worker->OpStarted();
    r.release();  // OnReceived owns it now
  }
  return UCS_INPROGRESS;
}

// Runs `fn(body)` once the message's whole data is in memory: at once for eager data,
// after a receive into a heap buffer for rendezvous data.
ucs_status_t WithBody(const Request& req, void* data, size_t length,
                      const ucp_am_recv_param_t* param,
                      std::function<void(const Request&, absl::string_view)> fn) {
  if (!IsRendezvous(param)) {
    fn(req, absl::string_view(static_cast<const char*>(data), length));
    return UCS_OK;
  }
  auto body = std::make_shared<std::string>(length, '\0');
  return StartReceive(req.worker, data, body->data(), length, false,
                      [req, body, fn = std::move(fn)](ucs_status_t s) {
                        if (s == UCS_OK) {
                          fn(req, *body);
                        } else {
                          req.Fail(absl::UnavailableError(absl::StrCat(
                              "receiving the request body failed: ", ucs_status_string(s))));
                        }
                      });
}

// ---------------------------------------------------------------- unary calls

ucs_status_t HandleUnary(const Request& req, void* data, size_t length,
                         const ucp_am_recv_param_t* param) {
  return WithBody(req, data, length, param, [](const Request& r, absl::string_view body) {
    std::string out;
    const Op op = MetricOp(r.header.op);
    absl::Status s = r.env().service->CallUnary(op, body, r.env().metrics, &out);
    if (!s.ok()) {
      r.Fail(s);
      return;
    }
    r.env().metrics->RecordCall(op, 0, r.start);
    r.worker->Send(r.conn, r.Reply(wire::ucx::kWholeRequest), nullptr, 0, std::move(out), nullptr);
  });
}

// ---------------------------------------------------------------- Put

// Decides the chunk's result once its bytes are in (or failed to arrive) and replies.
void FinishPut(const Request& req, const PutFields& f, std::unique_ptr<storage::PendingChunk> pending,
               absl::Status s) {
  const UcxServiceEnv& env = req.env();
  if (s.ok()) s = env.env->store->CommitPut(std::move(pending));
  pending.reset();  // a failed receive drops the reservation: no trace in the store
  env.metrics->AddPutResult(s.ok() ? PutResult::kStored : PutResult::kFailed);
  env.metrics->RecordCall(Op::kPut, static_cast<int>(s.code()), req.start);
  ReplyHeader reply = req.Reply(f.index);
  if (s.ok()) {
    req.worker->Send(req.conn, reply, nullptr, 0, {}, nullptr);
  } else {
    req.worker->SendError(req.conn, reply, s);
  }
}

absl::Status CheckPut(const Request& req, const PutFields& f, size_t length) {
  const uint32_t max_keys = req.env().env->limits.max_keys_per_request;
  if (f.size_bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", f.index, ": size_bytes is 0"));
  }
  if (req.direct() && length != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", f.index, ": a direct Put carries no payload but the message has ",
                     length, " bytes"));
  }
  if (!req.direct() && f.size_bytes != length) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", f.index, ": size_bytes is ",
                                                   f.size_bytes, " but the message carries ",
                                                   length, " payload bytes"));
  }
  if (f.index >= max_keys || f.count > max_keys) {
    return absl::InvalidArgumentError(absl::StrCat("more than server.max_keys_per_request (",
                                                   max_keys, ") chunks in one Put call"));
  }
  return absl::OkStatus();
}

// Receives a rendezvous payload straight into the pending chunk's memory: one contiguous
// buffer when its segments are adjacent (the usual case), an iovec otherwise.
ucs_status_t ReceivePut(const Request& req, const PutFields& f, void* desc,
                        std::unique_ptr<storage::PendingChunk> pending) {
  absl::Span<const storage::MutableSegment> segs = pending->segments();
  auto iov = std::make_shared<std::vector<ucp_dt_iov_t>>();
  for (const storage::MutableSegment& seg : segs) {
    if (!iov->empty() && static_cast<uint8_t*>(iov->back().buffer) + iov->back().length == seg.data) {
      iov->back().length += seg.size;
    } else {
      iov->push_back({seg.data, seg.size});
    }
  }
  const bool contiguous = iov->size() == 1;
  void* buffer = contiguous ? (*iov)[0].buffer : static_cast<void*>(iov->data());
  const size_t count = contiguous ? f.size_bytes : iov->size();
  auto held = std::make_shared<std::unique_ptr<storage::PendingChunk>>(std::move(pending));
  return StartReceive(req.worker, desc, buffer, count, !contiguous,
                      [req, f, held, iov](ucs_status_t s) {
                        absl::Status status;
                        if (s == UCS_OK) {
                          req.env().metrics->AddReceivedBytes(f.size_bytes);
                          (*held)->MarkWritten(f.size_bytes);
                        } else {
                          status = absl::UnavailableError(
                              absl::StrCat("receiving the chunk failed: ", ucs_status_string(s)));
                        }
                        FinishPut(req, f, std::move(*held), status);
                      });
}

// ---------------------------------------------------------------- direct access

// Most bytes one connection may have reserved or held in the arena at once; beyond it,
// chunks go through UCX (copied by the daemon) instead, so one client cannot pin the tier.
uint64_t DirectBudget(const SharedRegion& arena) { return arena.size() / 8; }

// The ArenaRun records of a chunk's segments (adjacent ones merged), or "" when one lies
// outside the arena.
template <typename Segment>
std::string ArenaRuns(const SharedRegion& arena, absl::Span<const Segment> segs) {
  std::vector<ArenaRun> runs;
  for (const Segment& seg : segs) {
    if (!arena.contains(seg.data, seg.size)) return {};
    const uint64_t offset = static_cast<uint64_t>(seg.data - arena.data());
    if (!runs.empty() && runs.back().offset + runs.back().length == offset) {
      runs.back().length += seg.size;
    } else {
      runs.push_back({offset, seg.size});
    }
  }
  return std::string(reinterpret_cast<const char*>(runs.data()), runs.size() * sizeof(ArenaRun));
}

// Room for `bytes` more in the connection's direct budget (and it is still open).
bool DirectRoom(const Request& req, uint64_t bytes) {
  const SharedRegion* arena = req.env().arena;
  return arena != nullptr && !req.conn->closed &&
         req.conn->direct_bytes + bytes <= DirectBudget(*arena);
}

// A direct Put whose chunk was reserved: tells the client where to write it, or to send
// it as a plain Put when the arena cannot take it directly (the reservation is dropped).
void ReserveDirect(const Request& req, const PutFields& f,
                   std::unique_ptr<storage::PendingChunk> pending) {
  ReplyHeader reply = req.Reply(f.index);
  std::string runs;
  if (DirectRoom(req, f.size_bytes)) runs = ArenaRuns(*req.env().arena, pending->segments());
  if (runs.empty()) {
    reply.flags = wire::ucx::kFlagSendPayload;
    req.worker->Send(req.conn, reply, nullptr, 0, {}, nullptr);
    return;
  }
  Connection& conn = *req.conn;
  reply.flags = wire::ucx::kFlagDirectRuns;
  reply.handle = conn.next_handle++;
  conn.direct_bytes += f.size_bytes;
  conn.reservations[reply.handle] = DirectPut{std::move(pending), f, req.start};
  req.worker->OpStarted();  // until committed or the connection closes
  req.worker->Send(req.conn, reply, nullptr, 0, std::move(runs), nullptr);
}

// The client wrote a reserved chunk: commit it and answer as the Put's reply.
void HandleCommit(const Request& req, const void* header) {
  const auto c = wire::ucx::ReadFields<wire::ucx::CommitFields>(header);
  Request put = req;
  put.header.op = static_cast<uint8_t>(WireOp::kPut);
  Connection& conn = *req.conn;
  auto it = conn.reservations.find(c.handle);
  if (it == conn.reservations.end()) {
    req.worker->SendError(
        req.conn, put.Reply(c.index),
        absl::InvalidArgumentError(absl::StrCat(
            "Commit names no reservation of this connection (handle ", c.handle, ")")));
    req.env().metrics->RecordCall(Op::kPut, static_cast<int>(absl::StatusCode::kInvalidArgument),
                                  req.start);
    return;
  }
  DirectPut d = std::move(it->second);
  conn.reservations.erase(it);
  conn.direct_bytes -= d.fields.size_bytes;
  put.start = d.start;
  req.env().metrics->AddDirectBytes(true, d.fields.size_bytes);
  d.pending->MarkWritten(d.fields.size_bytes);
  FinishPut(put, d.fields, std::move(d.pending), absl::OkStatus());
  req.worker->OpEnded();  // after the reply counted itself
}

// The client copied the chunks of Get `request_id` that it was told to read directly.
void HandleRelease(const Request& req) {
  Connection& conn = *req.conn;
  auto it = conn.holds.find(req.header.request_id);
  if (it == conn.holds.end()) return;  // nothing held (or released already): no reply either way
  for (const storage::ChunkRef& chunk : it->second) conn.direct_bytes -= chunk->meta().size_bytes;
  conn.holds.erase(it);
  req.worker->OpEnded();
}

ucs_status_t HandlePut(const Request& req, const void* header, void* data, size_t length,
                       const ucp_am_recv_param_t* param) {
  const PutFields f = wire::ucx::ReadFields<PutFields>(header);
  absl::StatusOr<Key128> ns = ResolveNamespace(req);
  absl::Status s = ns.ok() ? CheckPut(req, f, length) : ns.status();
  if (!s.ok()) {
    req.Fail(s);
    return UCS_OK;  // a rendezvous payload not received is dropped; the sender completes
  }
  storage::ChunkId id{*ns, {}};
  std::memcpy(id.key.data(), f.key, id.key.size());
  storage::ChunkMeta meta{f.size_bytes, f.tokens, f.format, f.checksum};
  auto pending = req.env().env->store->BeginPut(id, meta);
  if (!pending.ok()) {
    ReplyHeader reply = req.Reply(f.index);
    const bool present = absl::IsAlreadyExists(pending.status());
    req.env().metrics->AddPutResult(present ? PutResult::kAlreadyPresent : PutResult::kFailed);
    req.env().metrics->RecordCall(Op::kPut, present ? 0 : pending.status().raw_code(), req.start);
    if (present) {
      reply.flags = wire::ucx::kFlagAlreadyPresent;
      req.worker->Send(req.conn, reply, nullptr, 0, {}, nullptr);
    } else {
      req.worker->SendError(req.conn, reply, pending.status());
    }
    return UCS_OK;
  }
  if (req.direct()) {
    ReserveDirect(req, f, std::move(*pending));
    return UCS_OK;
  }
  if (IsRendezvous(param)) return ReceivePut(req, f, data, std::move(*pending));
  req.env().metrics->AddReceivedBytes(length);
  absl::Status append = (*pending)->Append(data, length);
  FinishPut(req, f, std::move(*pending), append);
  return UCS_OK;
}

// ---------------------------------------------------------------- Get

// A reply to Get item `index` carrying the chunk's metadata.
ReplyHeader ChunkReply(const Request& req, uint32_t index, const storage::ChunkRef& chunk) {
  const storage::ChunkMeta& meta = chunk->meta();
  ReplyHeader reply = req.Reply(index);
  reply.size_bytes = meta.size_bytes;
  reply.checksum = chunk->checksum();
  reply.tokens = meta.tokens;
  reply.format = meta.format;
  return reply;
}

// Tells a direct client where chunk `index` lies in the arena, holding the chunk until the
// client releases the request. False (nothing sent) when it cannot be read directly.
bool SendDirect(const Request& req, uint32_t index, const storage::ChunkRef& chunk) {
  const uint64_t size = chunk->meta().size_bytes;
  if (!req.direct() || !DirectRoom(req, size)) return false;
  std::string runs = ArenaRuns(*req.env().arena, chunk->segments());
  if (runs.empty()) return false;  // not in the arena (read from NVMe)
  Connection& conn = *req.conn;
  auto [held, first] = conn.holds.try_emplace(req.header.request_id);
  if (first) req.worker->OpStarted();  // until released or the connection closes
  held->second.push_back(chunk);
  conn.direct_bytes += size;
  req.env().metrics->AddDirectBytes(false, size);
  ReplyHeader reply = ChunkReply(req, index, chunk);
  reply.flags = wire::ucx::kFlagDirectRuns;
  req.worker->Send(req.conn, reply, nullptr, 0, std::move(runs), nullptr);
  return true;
}

// Sends chunk `index` as one reply per contiguous run of its stored memory.
void SendChunk(const Request& req, uint32_t index, const storage::ChunkRef& chunk) {
  ReplyHeader reply = ChunkReply(req, index, chunk);
  absl::Span<const storage::Segment> segs = chunk->segments();
  uint64_t offset = 0;
  for (size_t i = 0; i < segs.size();) {
    const uint8_t* start = segs[i].data;
    size_t run = segs[i].size;
    for (++i; i < segs.size() && start + run == segs[i].data; ++i) run += segs[i].size;
    reply.offset = offset;
    req.worker->Send(req.conn, reply, start, run, {}, chunk);
    offset += run;
  }
}

// Replies to item `i` of a Get (worker thread).
void ReplyToGetItem(const Request& req, uint32_t i, uint64_t capacity,
                    const absl::StatusOr<storage::ChunkRef>& ref) {
  if (!ref.ok()) {
    req.worker->SendError(req.conn, req.Reply(i), ref.status());
  } else if ((*ref)->meta().size_bytes > capacity) {
    ReplyHeader reply = req.Reply(i);
    reply.flags = wire::ucx::kFlagTooLarge;
    reply.size_bytes = (*ref)->meta().size_bytes;
    req.worker->Send(req.conn, reply, nullptr, 0, {}, nullptr);
  } else if (!SendDirect(req, i, *ref)) {
    SendChunk(req, i, *ref);
  }
}

// DRAM hits are answered at once; chunks on NVMe are read on the store's read threads and
// answered from this worker's mailbox when they arrive, in any order (replies carry the
// item index). The read threads touch only the store and the mailbox, never the worker,
// which may have stopped by then. The call is recorded with its last reply.
void ServeGet(const Request& req, const Key128& ns, const GetFields& g, absl::string_view body) {
  storage::ChunkStore* store = req.env().env->store;
  auto left = std::make_shared<uint32_t>(g.count);  // worker thread only
  for (uint32_t i = 0; i < g.count; ++i) {
    GetItemRecord rec;
    std::memcpy(&rec, body.data() + i * sizeof(rec), sizeof(rec));
    storage::ChunkId id{ns, {}};
    std::memcpy(id.key.data(), rec.key, id.key.size());
    req.worker->OpStarted();  // until the reply is handed to UCX
    auto reply = [req, i, capacity = rec.capacity, left](absl::StatusOr<storage::ChunkRef> ref) {
      ReplyToGetItem(req, i, capacity, ref);
      req.worker->OpEnded();  // after the send counted itself: in_flight() never dips to 0
      if (--*left == 0) req.env().metrics->RecordCall(Op::kGet, 0, req.start);
    };
    store->GetAsync(id, [store, box = req.worker->mailbox(), id, lease = g.lease_id,
                         reply = std::move(reply)](absl::StatusOr<storage::ChunkRef> ref) mutable {
      // The reference now protects the bytes, so the lease's hold has done its job.
      if (lease != 0) store->ReleaseLease(lease, id);
      box->Run(
          [reply = std::move(reply), ref = std::move(ref)]() mutable { reply(std::move(ref)); });
    });
  }
}

ucs_status_t HandleGet(const Request& req, const void* header, void* data, size_t length,
                       const ucp_am_recv_param_t* param) {
  const GetFields g = wire::ucx::ReadFields<GetFields>(header);
  absl::StatusOr<Key128> ns = ResolveNamespace(req);
  const uint32_t max_keys = req.env().env->limits.max_keys_per_request;
  absl::Status s = ns.status();
  if (s.ok() && (g.count == 0 || g.count > max_keys)) {
    s = absl::InvalidArgumentError(absl::StrCat("Get names ", g.count,
                                                " keys; 1 to server.max_keys_per_request (",
                                                max_keys, ") allowed"));
  } else if (s.ok() && length != uint64_t{g.count} * sizeof(GetItemRecord)) {
    s = absl::InvalidArgumentError(absl::StrCat("Get body of ", length, " bytes for ", g.count,
                                                " keys; expected ",
                                                g.count * sizeof(GetItemRecord)));
  }
  if (!s.ok()) {
    req.Fail(s);
    return UCS_OK;
  }
  const Key128 id = *ns;
  return WithBody(req, data, length, param, [id, g](const Request& r, absl::string_view body) {
    ServeGet(r, id, g, body);
  });
}

// ---------------------------------------------------------------- connection setup

void HandleHello(const Request& req) {
  ReplyHeader reply = req.Reply(wire::ucx::kWholeRequest);
  reply.size_bytes = req.conn->token;
  reply.offset = req.env().tcp_segment_bytes;  // the client checks it matches its own
  req.worker->Send(req.conn, reply, nullptr, 0, req.worker->address(), nullptr);
}

// The Attach reply body for a client that can map the arena: ArenaInfo and the remote
// key; "" when the daemon has no shared arena.
std::string ArenaBody(const SharedRegion* arena) {
  if (arena == nullptr) return {};
  const wire::ucx::ArenaInfo info{reinterpret_cast<uint64_t>(arena->data()), arena->size()};
  std::string body(reinterpret_cast<const char*>(&info), sizeof(info));
  body += arena->packed_rkey();
  return body;
}

// A request on an endpoint no connection owns: only Attach is understood there.
ucs_status_t HandleUnattached(UcxWorker* worker, ucp_ep_h ep, const void* header,
                              size_t header_length, const void* data, size_t length) {
  RequestHeader h;
  uint64_t token = 0;
  if (!wire::ucx::ParseRequestHeader(header, header_length, &h).ok() ||
      h.op != static_cast<uint8_t>(WireOp::kAttach) || length <= sizeof(token)) {
    return UCS_OK;  // nothing to answer on: the client never attached this endpoint
  }
  std::memcpy(&token, data, sizeof(token));
  if ((h.flags & wire::ucx::kFlagPeerErrorHandling) == 0) {
    // Answered on the connection's socket-address endpoint, which handles peer failures.
    if (ConnectionPtr conn = worker->Unattached(token)) {
      worker->SendError(conn, wire::ucx::MakeReplyHeader(h.op, h.request_id),
                        absl::FailedPreconditionError(
                            "Attach without peer error handling (flag 1): the daemon serves "
                            "only endpoints that handle peer failures, so that a client which "
                            "dies mid-transfer leaves nothing behind"));
    }
    return UCS_OK;
  }
  const absl::string_view address(static_cast<const char*>(data) + sizeof(token),
                                  length - sizeof(token));
  ConnectionPtr conn = worker->Attach(token, ep, address);
  if (conn == nullptr) return UCS_OK;
  worker->Send(conn, wire::ucx::MakeReplyHeader(h.op, h.request_id), nullptr, 0,
               (h.flags & wire::ucx::kFlagDirect) != 0 ? ArenaBody(worker->env().arena) : "",
               nullptr);
  return UCS_OK;
}

}  // namespace

ucs_status_t OnRequestMessage(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param) {
  Request req;
  req.worker = static_cast<UcxWorker*>(arg);
  req.worker->NoteActivity();
  req.start = TransportMetrics::Clock::now();
  const ucp_ep_h reply_ep =
      (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0 ? param->reply_ep : nullptr;
  if (reply_ep == nullptr) return UCS_OK;  // no one to answer
  req.conn = req.worker->Find(reply_ep);
  if (req.conn == nullptr && !IsRendezvous(param)) {
    return HandleUnattached(req.worker, reply_ep, header, header_length, data, length);
  }
  if (req.conn == nullptr || req.conn->closed) return UCS_OK;
  const UcxServiceEnv& env = req.env();
  env.metrics->AddReceivedBytes(header_length + (IsRendezvous(param) ? 0 : length));
  absl::Status s = wire::ucx::ParseRequestHeader(header, header_length, &req.header);
  // Commit and Release finish work already admitted, so a draining daemon still takes them.
  const bool finishes = req.header.op == static_cast<uint8_t>(WireOp::kCommit) ||
                        req.header.op == static_cast<uint8_t>(WireOp::kRelease);
  if (s.ok() && !finishes) s = env.env->Admit();
  // Request bodies other than Put payloads are keys and small messages; bound what one
  // request can make the daemon buffer.
  const uint64_t max_body = env.env->limits.max_frame_bytes + (64 << 10);
  if (s.ok() && req.header.op != static_cast<uint8_t>(WireOp::kPut) && length > max_body) {
    s = absl::ResourceExhaustedError(absl::StrCat("request body of ", length,
                                                  " bytes exceeds server.max_frame_bytes"));
  }
  if (!s.ok()) {
    env.env->log->Debug("ucx: request refused", {{"status", s}});
    req.Fail(s);
    return UCS_OK;
  }
  switch (static_cast<WireOp>(req.header.op)) {
    case WireOp::kPut:
      return HandlePut(req, header, data, length, param);
    case WireOp::kGet:
      return HandleGet(req, header, data, length, param);
    case WireOp::kHello:
      HandleHello(req);
      return UCS_OK;
    case WireOp::kCommit:
      HandleCommit(req, header);
      return UCS_OK;
    case WireOp::kRelease:
      HandleRelease(req);
      return UCS_OK;
    case WireOp::kAttach:
      req.Fail(absl::FailedPreconditionError("this connection is attached already"));
      return UCS_OK;
    default:
      return HandleUnary(req, data, length, param);
  }
}

}  // namespace kvstash::server::ucx
