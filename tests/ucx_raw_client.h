// RawUcxClient: a bare UCP endpoint to kvstashd's UCX port for wire-level tests and the
// fault client. It sends request messages exactly as given (valid or not) and collects the
// replies, without any of the client library's checks.
//
// Thread-safety: not thread-safe; one thread drives it.
#pragma once

#include <ucp/api/ucp.h>

#include <deque>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/ucx_wire.h"

namespace kvstash::testing {

class RawUcxClient {
 public:
  struct Reply {
    wire::ucx::ReplyHeader header{};
    std::string body;  // eager bodies only; a rendezvous body is dropped unread
    bool rendezvous = false;
  };

  // Connects to "HOST:PORT" with UCX transports `tls` ("" = UCX_TLS) and attaches a data
  // endpoint as the client library does; with `peer_errors` false, one without peer-failure
  // handling (which the daemon refuses). A refused Attach gives the daemon's status. With
  // `attach` false, only the socket-address endpoint: no Hello, no Attach.
  static absl::StatusOr<std::unique_ptr<RawUcxClient>> Connect(const std::string& address,
                                                               const std::string& tls,
                                                               bool peer_errors = true,
                                                               bool attach = true);
  ~RawUcxClient();

  // Starts sending one request message. The buffers must stay valid until the send
  // completes (Progress until sends_in_flight() is 0).
  absl::Status Send(const void* header, size_t header_len, const void* data, size_t size);
  // Progresses until a reply arrives; DEADLINE_EXCEEDED after `timeout`.
  absl::StatusOr<Reply> NextReply(absl::Duration timeout);
  // Progresses for `duration`.
  void Progress(absl::Duration duration);
  int sends_in_flight() const { return sends_in_flight_; }
  bool failed() const { return failed_; }

  // Sends a unary request of `op` with `body` and waits for its reply.
  absl::StatusOr<Reply> Call(wire::ucx::Op op, const std::string& body, absl::Duration timeout);
  // Sends a Hello presenting `bearer_token` ("" for none) and waits for its reply; a
  // successful one gives token() and the daemon worker's address for SendAttach.
  absl::StatusOr<Reply> Hello(const std::string& bearer_token);
  // Sends an Attach naming connection `token` on an endpoint to the daemon's worker
  // (created by the first call, from the last successful Hello's address; requests go on
  // it from then on), without waiting for a reply.
  absl::Status SendAttach(uint64_t token, bool peer_errors = true);
  // The connection's token from the last successful Hello; 0 before one.
  uint64_t token() const { return token_; }

  // Registers the namespace named `model_id` (TestNamespace) and returns its 16-byte id.
  absl::StatusOr<std::string> RegisterNamespace(const std::string& model_id);

 private:
  RawUcxClient() = default;
  // Hello on the sockaddr endpoint, then Attach on an endpoint to the worker address.
  absl::Status Attach(bool peer_errors);
  static ucs_status_t OnReply(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param);

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_ep_h control_ep_ = nullptr;  // sockaddr endpoint
  ucp_ep_h ep_ = nullptr;          // attached data endpoint
  uint64_t token_ = 0;
  std::string daemon_address_;  // the daemon worker's UCP address (Hello reply)
  int sends_in_flight_ = 0;
  bool failed_ = false;
  uint64_t next_id_ = 1000;
  std::deque<Reply> replies_;
};

}  // namespace kvstash::testing
