// Put over UCX: a plain Put carries its payload (eager, or received by rendezvous straight
// into the pending chunk); a direct Put reserves the chunk, the client writes it into the
// shared arena and Commits it.
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ucx/ucx_handlers.h"
#include "server/wire_put.h"

namespace kvstash::server::ucx {
namespace {

using wire::ucx::PutFields;
using wire::ucx::PutHintsFields;
using wire::ucx::ReplyHeader;

// Decides the chunk's result once its bytes are in (or failed to arrive) and replies.
void FinishPut(const Request& req, const PutFields& f, PutChunk chunk) {
  const absl::Status s = chunk.Finish();
  req.requests().RecordCall(Op::kPut, s.code(), req.start);
  ReplyHeader reply = req.Reply(f.index);
  if (chunk.already_present()) reply.flags = wire::ucx::kFlagAlreadyPresent;
  if (s.ok()) {
    req.worker->Send(req.conn, reply, nullptr, 0, {}, nullptr);
  } else {
    req.worker->SendError(req.conn, reply, s);
  }
  PutAnswered(req);
}

// The layer's chunk rules, then whether the message's payload matches what it announces.
absl::Status CheckPut(const Request& req, const PutChunkHeader& h, size_t length) {
  if (absl::Status s = req.requests().CheckPutChunk(h); !s.ok()) return s;
  if (req.direct() && length != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", h.index, ": a direct Put carries no payload but the message has ",
                     length, " bytes"));
  }
  if (!req.direct() && h.meta.size_bytes != length) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", h.index, ": size_bytes is ",
                                                   h.meta.size_bytes, " but the message carries ",
                                                   length, " payload bytes"));
  }
  return absl::OkStatus();
}

// Receives a rendezvous payload straight into the pending chunk's memory: one contiguous
// buffer when its segments are adjacent (the usual case), an iovec otherwise.
ucs_status_t ReceivePut(const Request& req, const PutFields& f, void* desc, PutChunk chunk) {
  auto iov = std::make_shared<std::vector<ucp_dt_iov_t>>();
  for (const storage::MutableSegment& seg : chunk.pending()->segments()) {
    if (!iov->empty() &&
        static_cast<uint8_t*>(iov->back().buffer) + iov->back().length == seg.data) {
      iov->back().length += seg.size;
    } else {
      iov->push_back({seg.data, seg.size});
    }
  }
  const bool contiguous = iov->size() == 1;
  void* buffer = contiguous ? (*iov)[0].buffer : static_cast<void*>(iov->data());
  const size_t count = contiguous ? f.size_bytes : iov->size();
  auto held = std::make_shared<PutChunk>(std::move(chunk));
  return StartReceive(req.worker, desc, buffer, count, !contiguous,
                      [req, f, held, iov](ucs_status_t s) {
                        if (s == UCS_OK) {
                          req.requests().metrics().AddReceivedBytes(f.size_bytes);
                          held->pending()->MarkWritten(f.size_bytes);
                        } else {
                          held->Fail(absl::UnavailableError(
                              absl::StrCat("receiving the chunk failed: ", ucs_status_string(s))));
                        }
                        FinishPut(req, f, std::move(*held));
                      });
}

// A direct Put whose chunk was reserved: tells the client where to write it, or to send
// it as a plain Put when the arena cannot take it directly (the reservation is dropped).
void ReserveDirect(const Request& req, const PutFields& f, PutChunk chunk) {
  ReplyHeader reply = req.Reply(f.index);
  std::string runs;
  if (DirectRoom(req, f.size_bytes))
    runs = ArenaRuns(req.env().arena->data(), req.env().arena->size(), chunk.pending()->segments());
  if (runs.empty()) {
    reply.flags = wire::ucx::kFlagSendPayload;
    req.worker->Send(req.conn, reply, nullptr, 0, {}, nullptr);
    return;
  }
  Connection& conn = *req.conn;
  reply.flags = wire::ucx::kFlagDirectRuns;
  reply.handle = conn.next_handle++;
  conn.direct_bytes += f.size_bytes;
  conn.reservations[reply.handle] = DirectPut{std::move(chunk), f, req.start};
  req.worker->OpStarted();  // until committed or the connection closes
  req.worker->Send(req.conn, reply, nullptr, 0, std::move(runs), nullptr);
}

}  // namespace

void HandleCommit(const Request& req, const void* header) {
  const auto c = wire::ucx::ReadFields<wire::ucx::CommitFields>(header);
  Request put = req;
  put.header.op = static_cast<uint8_t>(wire::ucx::Op::kPut);
  Connection& conn = *req.conn;
  auto it = conn.reservations.find(c.handle);
  if (it == conn.reservations.end()) {
    const absl::Status s = absl::InvalidArgumentError(
        absl::StrCat("Commit names no reservation of this connection (handle ", c.handle, ")"));
    req.worker->SendError(req.conn, put.Reply(c.index), s);
    req.requests().RecordCall(Op::kPut, s.code(), req.start);
    return;
  }
  DirectPut d = std::move(it->second);
  conn.reservations.erase(it);
  conn.direct_bytes -= d.fields.size_bytes;
  put.start = d.start;
  req.requests().metrics().AddDirectBytes(true, d.fields.size_bytes);
  d.chunk.pending()->MarkWritten(d.fields.size_bytes);
  FinishPut(put, d.fields, std::move(d.chunk));
  req.worker->OpEnded();  // after the reply counted itself
}

ucs_status_t HandlePut(const Request& req, const void* header, void* data, size_t length,
                       const ucp_am_recv_param_t* param) {
  const PutFields f = wire::ucx::ReadFields<PutFields>(header);
  PutHintsFields hints{};
  absl::StatusOr<Key128> ns = req.Namespace(auth::Access::kWrite);
  absl::Status s =
      ns.ok() ? wire::ucx::ReadPutHints(header, req.header.flags, &hints) : ns.status();
  const PutChunkHeader h = PutHeaderFromWire(f, hints);
  if (s.ok()) s = CheckPut(req, h, length);
  if (!s.ok()) {
    req.Fail(s);
    return UCS_OK;  // a rendezvous payload not received is dropped; the sender completes
  }
  PutChunk chunk = req.requests().BeginPut(req.caller, *ns, h);
  if (chunk.pending() == nullptr) {  // already present, or refused by the store
    FinishPut(req, f, std::move(chunk));
    return UCS_OK;
  }
  if (req.direct()) {
    ReserveDirect(req, f, std::move(chunk));
    return UCS_OK;
  }
  if (IsRendezvous(param)) return ReceivePut(req, f, data, std::move(chunk));
  req.requests().metrics().AddReceivedBytes(length);
  if (absl::Status append = chunk.pending()->Append(data, length); !append.ok()) {
    chunk.Fail(append);
  }
  FinishPut(req, f, std::move(chunk));
  return UCS_OK;
}

}  // namespace kvstash::server::ucx
