// The pieces of UCX request handling (ucx_requests.h) shared by its files: one request
// being served, receiving a rendezvous body, the direct-access budget, and the handlers of
// each op (ucx_put.cc, ucx_get.cc; dispatch and connection setup in ucx_requests.cc).
//
// Thread-safety: the worker's thread only, like everything under OnRequestMessage.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/ucx_wire.h"
#include "server/arena_runs.h"
#include "server/requests.h"
#include "server/ucx/ucx_worker.h"

namespace kvstash::server::ucx {

// One request message being served.
struct Request {
  UcxWorker* worker = nullptr;
  ConnectionPtr conn;
  wire::ucx::RequestHeader header{};
  TransportMetrics::Clock::time_point start;
  CallAuth caller;  // who sends it (Commit, Release: none; they finish admitted work)

  const UcxServiceEnv& env() const { return worker->env(); }
  const Requests& requests() const { return worker->requests(); }
  // The client maps the arena (Put: no payload, reserve; Get: answer with where to read).
  bool direct() const { return (header.flags & wire::ucx::kFlagDirect) != 0; }
  wire::ucx::ReplyHeader Reply(uint32_t index) const {
    wire::ucx::ReplyHeader r = wire::ucx::MakeReplyHeader(header.op, header.request_id);
    r.index = index;
    return r;
  }
  // The metrics' name of this request's op.
  Op op() const;
  // The request's namespace id as sent (16 bytes).
  absl::string_view NamespaceId() const {
    return {reinterpret_cast<const char*>(header.namespace_id), sizeof(header.namespace_id)};
  }
  // The request's namespace id, resolved, once the caller holds `access` on its tenant.
  absl::StatusOr<Key128> Namespace(auth::Access access) const;
  // Answers the whole request with `status` and records the call.
  void Fail(const absl::Status& status) const;
};

inline bool IsRendezvous(const ucp_am_recv_param_t* param) {
  return (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
}

// Starts receiving a rendezvous payload into `buffer`/`count` (contiguous bytes, or
// `count` ucp_dt_iov_t entries when `iov`); `done(status)` runs once it is complete.
// Returns the value for the AM callback.
ucs_status_t StartReceive(UcxWorker* worker, void* desc, void* buffer, size_t count, bool iov,
                          std::function<void(ucs_status_t)> done);
// Runs `fn(req, body)` once the message's whole data is in memory: at once for eager data,
// after a receive into a heap buffer for rendezvous data.
ucs_status_t WithBody(const Request& req, void* data, size_t length,
                      const ucp_am_recv_param_t* param,
                      std::function<void(const Request&, absl::string_view)> fn);

// One chunk of Put call `req.header.request_id` was answered (a result or an error): once
// all are, the call ends and releases its admission (Connection::put_calls).
void PutAnswered(const Request& req);

// Room for `bytes` more in the connection's direct budget (and it is still open, and
// its caller may map the arena: a principal that may not is answered with copies).
bool DirectRoom(const Request& req, uint64_t bytes);

// The op handlers. Each answers every problem with an error reply.
ucs_status_t HandlePut(const Request& req, const void* header, void* data, size_t length,
                       const ucp_am_recv_param_t* param);
// The client wrote a reserved chunk: commit it and answer as the Put's reply.
void HandleCommit(const Request& req, const void* header);
ucs_status_t HandleGet(const Request& req, const void* header, void* data, size_t length,
                       const ucp_am_recv_param_t* param);
// The client copied the chunks of Get `request_id` that it was told to read directly.
void HandleRelease(const Request& req);

}  // namespace kvstash::server::ucx
