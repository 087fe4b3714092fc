#include "server/ucx/ucx_requests.h"

#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/ucx/ucx_handlers.h"

namespace kvstash::server::ucx {

using wire::ucx::ReplyHeader;
using wire::ucx::RequestHeader;
using WireOp = wire::ucx::Op;

Op Request::op() const {
  switch (static_cast<WireOp>(header.op)) {
#define KVSTASH_OP_OF_UCX(name, metric, ucx_op) \
  case WireOp::k##name:                         \
    return Op::k##name;
    KVSTASH_CALLS(KVSTASH_OP_OF_UCX, KVSTASH_OP_OF_UCX)
#undef KVSTASH_OP_OF_UCX
    default:  // the transport's own messages (Hello, Attach, Commit, Release)
      return Op::kHealth;
  }
}

absl::StatusOr<Key128> Request::Namespace(auth::Access access) const {
  return requests().ResolveNamespace(caller, NamespaceId(), access);
}

void Request::Fail(const absl::Status& status) const {
  worker->SendError(conn, Reply(wire::ucx::kWholeRequest), status);
  requests().RecordCall(op(), status.code(), start);
  if (header.op == static_cast<uint8_t>(WireOp::kPut)) PutAnswered(*this);
}

void PutAnswered(const Request& req) {
  auto& calls = req.conn->put_calls;
  auto it = calls.find(req.header.request_id);
  if (it != calls.end() && ++it->second.answered >= it->second.count) calls.erase(it);
}

bool DirectRoom(const Request& req, uint64_t bytes) {
  const SharedRegion* arena = req.env().arena;
  return arena != nullptr && !req.conn->closed && Requests::MayMapArena(req.caller) &&
         req.conn->direct_bytes + bytes <= DirectBudget(arena->size());
}

namespace {

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

}  // namespace

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

namespace {

ucs_status_t HandleUnary(const Request& req, void* data, size_t length,
                         const ucp_am_recv_param_t* param) {
  return WithBody(req, data, length, param, [](const Request& r, absl::string_view body) {
    std::string out;
    const absl::Status s = r.requests().Unary(r.caller, r.op(), body, &out);
    if (!s.ok()) {
      r.Fail(s);
      return;
    }
    r.requests().RecordCall(r.op(), absl::StatusCode::kOk, r.start);
    r.worker->Send(r.conn, r.Reply(wire::ucx::kWholeRequest), nullptr, 0, std::move(out), nullptr);
  });
}

// Remembers the Hello's token for the connection's requests; a token the daemon refuses
// gets UNAUTHENTICATED, and so does everything else on the connection. Answered on the
// socket-address endpoint, whoever attached: the connection's token goes only to its client.
void HandleHello(const Request& req, absl::string_view body) {
  absl::string_view token;
  absl::Status s = wire::ucx::ParseHello(body, &token);
  if (s.ok()) {
    req.conn->auth_token = std::string(token);
    s = req.requests().Principal(token).status();
  }
  if (!s.ok()) {
    req.requests().LogRefused(Op::kHealth, s, "ucx hello");
    req.worker->SendError(req.conn, req.Reply(wire::ucx::kWholeRequest), s, req.conn->ep);
    return;
  }
  req.conn->hello_done = true;
  // The client checks tcp_segment_bytes matches its own.
  const wire::ucx::HelloReply hello{req.conn->token, req.env().tcp_segment_bytes};
  req.worker->Send(req.conn, req.Reply(wire::ucx::kWholeRequest), nullptr, 0,
                   wire::ucx::EncodeHelloReply(hello, req.worker->address()), nullptr,
                   req.conn->ep);
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

// Most Put calls one connection may have open (not all chunks answered) at once; each holds
// an entry and its principal's call slot until then.
constexpr size_t kMaxOpenPutCalls = 256;

// The admission of one Put message. A Put call is one message per chunk: the first message
// of a request id (whatever its index) is the call the principal's limits admit or refuse,
// and the call's other messages share that admission (they only authenticate) or that
// refusal until all `count` chunks are answered.
absl::StatusOr<CallAuth> AdmitPut(const Request& req, const void* header) {
  Connection& conn = *req.conn;
  auto it = conn.put_calls.find(req.header.request_id);
  if (it != conn.put_calls.end()) {
    if (!it->second.refused.ok()) return it->second.refused;
    absl::StatusOr<CallAuth> caller =
        req.requests().Authenticate(Op::kPut, conn.auth_token, /*begins_call=*/false);
    if (caller.ok()) caller->slot = it->second.caller.slot;
    return caller;
  }
  if (conn.put_calls.size() >= kMaxOpenPutCalls) {
    return absl::ResourceExhaustedError(
        absl::StrCat("more than ", kMaxOpenPutCalls, " Put calls open on this connection at once"));
  }
  absl::StatusOr<CallAuth> caller = req.requests().Authenticate(Op::kPut, conn.auth_token);
  PutCall& call = conn.put_calls[req.header.request_id];
  call.count = wire::ucx::ReadFields<wire::ucx::PutFields>(header).count;
  if (caller.ok()) {
    call.caller = *caller;
  } else {
    call.refused = caller.status();
  }
  return caller;
}

// Authenticates the connection's token for one request (again each time: a reload may
// have revoked it), admitted under the principal's limits.
absl::Status Authenticate(Request* req, const void* header) {
  absl::StatusOr<CallAuth> caller =
      req->header.op == static_cast<uint8_t>(WireOp::kPut)
          ? AdmitPut(*req, header)
          : req->requests().Authenticate(req->op(), req->conn->auth_token);
  if (!caller.ok()) return caller.status();
  req->caller = *std::move(caller);
  return absl::OkStatus();
}

// A request on an endpoint no connection owns: only Attach is understood there.
ucs_status_t HandleUnattached(UcxWorker* worker, ucp_ep_h ep, const void* header,
                              size_t header_length, const void* data, size_t length) {
  RequestHeader h;
  uint64_t token = 0;
  absl::string_view address;
  if (!wire::ucx::ParseRequestHeader(header, header_length, &h).ok() ||
      h.op != static_cast<uint8_t>(WireOp::kAttach) ||
      !wire::ucx::ParseAttachBody(absl::string_view(static_cast<const char*>(data), length), &token,
                                  &address)
           .ok()) {
    return UCS_OK;  // nothing to answer on: the client never attached this endpoint
  }
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
  ConnectionPtr conn = worker->Attach(token, ep, address);
  if (conn == nullptr) return UCS_OK;
  const wire::ucx::ReplyHeader reply = wire::ucx::MakeReplyHeader(h.op, h.request_id);
  absl::StatusOr<auth::PrincipalPtr> principal = worker->requests().Principal(conn->auth_token);
  if (!principal.ok()) {
    worker->SendError(conn, reply, principal.status());
    return UCS_OK;
  }
  std::string arena;
  if ((h.flags & wire::ucx::kFlagDirect) != 0 && worker->env().arena != nullptr) {
    // Mapping the arena reaches every tenant's chunks: trusted principals only; the
    // others' clients fall back to copies through UCX.
    if ((*principal)->trusted) {
      arena = ArenaBody(worker->env().arena);
    } else {
      worker->env().env->log->Debug("direct access refused: principal not trusted",
                                    {{"principal", (*principal)->name}});
    }
  }
  worker->Send(conn, reply, nullptr, 0, std::move(arena), nullptr);
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
  const Requests& requests = req.requests();
  requests.metrics().AddReceivedBytes(header_length + (IsRendezvous(param) ? 0 : length));
  absl::Status s = wire::ucx::ParseRequestHeader(header, header_length, &req.header);
  // Commit and Release finish work already admitted, so a draining daemon still takes them.
  const bool finishes = req.header.op == static_cast<uint8_t>(WireOp::kCommit) ||
                        req.header.op == static_cast<uint8_t>(WireOp::kRelease);
  if (s.ok() && !finishes) s = requests.Admit();
  // Request bodies other than Put payloads are keys and small messages; bound what one
  // request can make the daemon buffer.
  const uint64_t max_body = requests.env().limits.max_frame_bytes + (64 << 10);
  if (s.ok() && req.header.op != static_cast<uint8_t>(WireOp::kPut) && length > max_body) {
    s = absl::ResourceExhaustedError(
        absl::StrCat("request body of ", length, " bytes exceeds server.max_frame_bytes"));
  }
  if (s.ok() && !finishes && req.header.op != static_cast<uint8_t>(WireOp::kHello)) {
    s = Authenticate(&req, header);
  }
  if (!s.ok()) {
    requests.LogRefused(req.op(), s, {});
    req.Fail(s);
    return UCS_OK;
  }
  switch (static_cast<WireOp>(req.header.op)) {
    case WireOp::kPut:
      return HandlePut(req, header, data, length, param);
    case WireOp::kGet:
      return HandleGet(req, header, data, length, param);
    case WireOp::kHello:
      return WithBody(req, data, length, param, &HandleHello);
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
