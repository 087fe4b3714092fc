// UcxChannel: one UCP worker with its endpoints to the daemon, used by one call at a time.
// Connecting takes two endpoints: one to the daemon's UCX port (UCX sockaddr connection
// setup, over TCP; it stays open so either side notices the other's death), and one from
// the worker address the daemon sends back (Hello), which may use any transport in the
// list, shared memory included, and carries every request once attached (Attach).
// The calling thread drives it: it sends the request messages and progresses the worker
// itself until the replies are in, so a call costs no thread hand-off.
//
// Get replies are received straight into the caller's buffers (rendezvous data lands at
// its offset; with a registered memory handle UCX skips its own registration). Put
// payloads are sent from the caller's buffers. With direct access (the daemon's arena is
// mapped here through its UCX remote key), puts of kDirectPutMin bytes and more are
// reserved, copied into the arena and committed, and gets of chunks in the arena are
// copied out of it, then released (docs/protocol.md, "Direct access"). A call that fails
// mid-way (deadline, lost connection) leaves the channel broken(); destroying it
// force-closes the endpoint and waits for UCX to let go of every caller buffer before
// returning.
//
// Thread-safety: not thread-safe; UcxTransport hands each channel to one caller at a time.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/arena_view.h"
#include "client/parallel_copy.h"
#include "kvstash/client.h"
#include "proto/ucx_wire.h"

namespace kvstash::client_internal {

// Finds the registered memory handle covering [data, data + size), or null.
using MemhLookup = std::function<ucp_mem_h(const void* data, size_t size)>;

class UcxChannel {
 public:
  // Creates a worker on `context`, connects to `addr` and attaches the data endpoint.
  // UNAVAILABLE when the daemon is unreachable, DEADLINE_EXCEEDED past `deadline`.
  // With `direct`, asks for direct access to the daemon's arena; `copier` (not owned,
  // outlives the channel) then does the copies in and out of it. FAILED_PRECONDITION when
  // the daemon's UCX TCP segment differs from `tcp_segment_bytes` (this context's). The
  // Hello presents `token` ("" for none); UNAUTHENTICATED when the daemon refuses it.
  // A daemon that grants no direct access (an untrusted principal) leaves the channel
  // copying through UCX.
  static absl::StatusOr<std::unique_ptr<UcxChannel>> Connect(
      ucp_context_h context, const sockaddr* addr, socklen_t addr_len, bool direct,
      uint64_t tcp_segment_bytes, const std::string& token, ParallelCopier* copier,
      absl::Time deadline);
  // Smallest put that goes through the arena: below it the extra round trip costs more
  // than the copy it saves.
  static constexpr uint64_t kDirectPutMin = 256 << 10;
  ~UcxChannel();

  // True once the endpoint failed or a call was abandoned; the channel must be dropped.
  bool broken() const { return broken_; }

  // Handles what arrived while no call was using the channel: the UCX keepalives the daemon
  // sends every endpoint (every 20 s by default), an endpoint failure. Left unread, they
  // fill a shared-memory receive queue, and the daemon's worker then retries the next
  // keepalive on every progress call, ~30% of a core for as long as this channel idles.
  // Never blocks; REQUIRES: no call in progress on this channel.
  void ProgressIdle();

  // Sends `body` as a unary request of `op` and returns the reply body (a serialized
  // kvstash.v1 response), or the daemon's error.
  absl::StatusOr<std::string> Unary(wire::ucx::Op op, const Key128* ns, const std::string& body,
                                    absl::Time deadline, uint16_t flags = 0);
  // One request message per item, all in flight at once; fills each item's result.
  absl::Status Put(const Key128& ns, absl::Span<PutItem> items,
                   absl::Span<const uint64_t> checksums, const MemhLookup& memh,
                   absl::Time deadline);
  // One request for every item; fills each item's buffer and result.
  absl::Status Get(const Key128& ns, absl::Span<GetItem> items, uint64_t lease_id,
                   const MemhLookup& memh, absl::Time deadline);

 private:
  struct Call;  // the state of the call in progress
  UcxChannel(ucp_worker_h worker, int efd, ParallelCopier* copier);
  // Hello on the sockaddr endpoint, then the data endpoint and Attach on it.
  absl::Status Handshake(bool direct, uint64_t tcp_segment_bytes, const std::string& bearer_token,
                         absl::Time deadline);
  // Maps the arena an Attach reply `body` describes; leaves arena_ null when it cannot.
  void MapArena(absl::string_view body);
  // The arena bytes `body` (ArenaRun records) names for a chunk of `size` bytes, or an
  // empty vector (channel broken) when they do not add up or leave the arena.
  std::vector<absl::Span<uint8_t>> ArenaSpans(absl::string_view body, uint64_t size);
  // Direct Put item `index` was reserved at `runs`: copies it there and commits it.
  void WriteDirect(const wire::ucx::ReplyHeader& h, absl::string_view runs);
  // Sends item `index` of the Put in progress again, as a plain Put with its payload.
  void ResendPlain(uint32_t index);
  // Direct Get item: plans its copy out of the arena.
  void ReadDirect(const wire::ucx::ReplyHeader& h, absl::string_view runs);
  // Runs the planned copies of every direct Get item, then marks those items OK.
  void CopyDirectReads();
  // Runs `fn(body)` once a reply's body is in memory (eager at once, rendezvous after a
  // receive into a temporary buffer).
  void WithBody(void* data, size_t length, bool rndv, std::function<void(absl::string_view)> fn,
                ucs_status_t* result);
  absl::Status SendRequest(const void* header, size_t header_len, const void* data, size_t size,
                           ucp_mem_h memh);
  // Progresses the worker until `done()` or `deadline` (DEADLINE_EXCEEDED, channel broken)
  // or the endpoint fails (UNAVAILABLE, channel broken).
  absl::Status WaitFor(const std::function<bool()>& done, absl::Time deadline);
  void OnReply(const wire::ucx::ReplyHeader& h, void* data, size_t length,
               const ucp_am_recv_param_t* param, ucs_status_t* result);
  void OnPutReply(const wire::ucx::ReplyHeader& h, void* data, size_t length,
                  const ucp_am_recv_param_t* param, ucs_status_t* result);
  void OnGetReply(const wire::ucx::ReplyHeader& h, void* data, size_t length,
                  const ucp_am_recv_param_t* param, ucs_status_t* result);
  void ReceiveInto(void* desc, void* dst, size_t length, bool rndv, ucp_mem_h memh,
                   std::function<void(ucs_status_t)> done, ucs_status_t* result);

  static ucs_status_t OnReplyMessage(void* arg, const void* header, size_t header_length,
                                     void* data, size_t length, const ucp_am_recv_param_t* param);
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  static void OnSent(void* request, ucs_status_t status, void* user_data);
  static void OnReceived(void* request, ucs_status_t status, size_t length, void* user_data);

  ucp_worker_h worker_ = nullptr;
  ucp_ep_h control_ep_ = nullptr;  // the sockaddr endpoint
  ucp_ep_h ep_ = nullptr;          // where requests go: the data endpoint once attached
  const int efd_;
  ParallelCopier* const copier_;
  bool broken_ = false;
  std::string broken_reason_;
  uint64_t next_request_id_ = 1;
  int64_t outstanding_ = 0;  // sends and receives UCX still holds buffers of
  // Sends not yet complete. While one is, WaitFor never sleeps: a rendezvous payload that
  // moves as active-message fragments (shared memory with peer-failure handling) is pushed
  // only by this worker's progress, and nothing wakes a sleeping sender once the
  // receiver has drained its queue.
  int64_t sends_in_flight_ = 0;
  std::unique_ptr<Call> call_;
  // The daemon's arena, mapped (direct access), or null.
  ucp_rkey_h arena_rkey_ = nullptr;
  std::unique_ptr<ArenaView> arena_;
};

}  // namespace kvstash::client_internal
