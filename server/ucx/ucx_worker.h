// UcxWorker: one UCP worker and the thread that progresses it, with the connections
// (endpoints) accepted onto it. Requests arriving on those connections are dispatched to
// ucx_requests.h on this thread; replies are sent from it too.
//
// The thread spins on ucp_worker_progress for a few microseconds after the last event (a
// request's next message usually follows at once), then arms the worker and sleeps in
// poll() on its event fd, so an idle daemon uses no CPU.
//
// A connection whose peer fails (UCP_ERR_HANDLING_MODE_PEER) is force-closed: its in-flight
// sends and receives complete with errors, which drops pending Put chunks (no trace in the
// store) and releases the chunk references held by Get sends.
//
// Thread-safety: Accept(), Wake() and in_flight() are thread-safe. Everything else, and
// every Connection, belongs to the worker's thread once Start() returned, and to the
// controlling thread before Start() and after Stop().
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "proto/ucx_wire.h"
#include "server/requests.h"
#include "server/service_env.h"
#include "server/transport_metrics.h"
#include "server/ucx/ucx_context.h"
#include "storage/chunk.h"

namespace kvstash::server::ucx {

// What the request handlers need from the daemon. Pointees outlive every worker.
struct UcxServiceEnv {
  const ServiceEnv* env = nullptr;      // store, registry, limits, draining, log
  std::string version;                  // what Health reports
  TransportMetrics* metrics = nullptr;  // the "ucx" transport's metrics
  const SharedRegion* arena = nullptr;  // the DRAM arena clients may map; null: none
  uint64_t tcp_segment_bytes = 0;       // the context's UCX TCP segment (Hello reply)
};

class UcxWorker;

// Work handed to a worker's thread from other threads (accepted connections, gets whose
// chunks the store read from NVMe).
// Producers hold it by shared_ptr, so a task that arrives after the worker stopped is
// destroyed unrun instead of touching a freed worker.
//
// Thread-safety: thread-safe; SetOwner() and RunPending() on the worker's thread.
class Mailbox {
 public:
  using Task = absl::AnyInvocable<void() &&>;

  explicit Mailbox(ucp_worker_h worker) : worker_(worker) {}

  // The thread that runs tasks inline (the worker's), or std::thread::id() for none.
  void SetOwner(std::thread::id owner);
  // Runs `task` now when called on the owner thread; otherwise queues it and wakes the
  // worker. Once closed, destroys it unrun.
  void Run(Task task);
  // Runs the queued tasks (the owner thread, or the controlling thread after it ended).
  void RunPending();
  bool pending() const { return pending_.load(std::memory_order_acquire); }
  // Refuses further tasks and destroys the queued ones unrun.
  void Close();

 private:
  const ucp_worker_h worker_;
  absl::Mutex mu_;
  std::thread::id owner_ ABSL_GUARDED_BY(mu_);
  std::vector<Task> tasks_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> pending_{false};
};

// One client connection. `ep` is accepted from the listener (TCP, peer-failure handling:
// its failure is how a dead client is noticed). Once the client attached, requests arrive
// on `request_ep` (UCX's side of the client's worker-address endpoint) and replies go on
// `data_ep`, an endpoint to the client's worker address; both may use any transport,
// shared memory included. Owned by its worker's maps; in-flight operations hold a
// reference so a reply never goes to a freed endpoint.
// A chunk reserved for a client that writes it into the shared arena itself (direct Put).
struct DirectPut {
  PutChunk chunk;  // pending
  wire::ucx::PutFields fields{};
  TransportMetrics::Clock::time_point start;
};

// A Put call of one connection: its first message (whatever its index) is admitted or
// refused under the principal's limits, and that admission (`caller`'s limiter slot) or
// refusal holds for the call's other messages until `count` of its chunks are answered or
// the connection closes.
struct PutCall {
  CallAuth caller;
  absl::Status refused;  // not OK: the call was refused, and so is each of its chunks
  uint32_t count = 0;
  uint32_t answered = 0;
};

struct Connection {
  UcxWorker* worker = nullptr;
  ucp_ep_h ep = nullptr;          // from the listener; ours
  ucp_ep_h request_ep = nullptr;  // UCX's own; identifies the attached requests
  ucp_ep_h data_ep = nullptr;     // ours, to the client's worker address, or null
  uint64_t token = 0;             // names this connection in Hello / Attach; random, secret
  // A Hello on `ep` succeeded: only then may an Attach name the token, so the data endpoint
  // is always the one of the client that received the token in its Hello reply.
  bool hello_done = false;
  // The bearer token the Hello presented ("" for none). Every request authenticates it
  // again, so a token revoked by a reload loses its connections' access at once.
  std::string auth_token;
  bool closed = false;  // the peer failed or the worker is stopping: send nothing more
  // Direct access: reservations by handle, and the chunks of Gets the client is still
  // copying, by request id. Each entry counts in the worker's in_flight() until committed
  // or released, or until Close() drops it (a reserved chunk then leaves no trace).
  absl::flat_hash_map<uint64_t, DirectPut> reservations;
  absl::flat_hash_map<uint64_t, std::vector<storage::ChunkRef>> holds;
  uint64_t next_handle = 1;
  uint64_t direct_bytes = 0;  // reserved plus held
  // Put calls not fully answered yet, by request id (bounded in ucx_requests.cc).
  absl::flat_hash_map<uint64_t, PutCall> put_calls;

  ucp_ep_h reply_ep() const { return data_ep != nullptr ? data_ep : ep; }
};
using ConnectionPtr = std::shared_ptr<Connection>;

class UcxWorker {
 public:
  // Creates the UCP worker (with wakeup support) on `context`; `on_request` handles the
  // requests its connections send (wire::ucx::kRequestAmId), called with the worker as `arg`.
  static absl::StatusOr<std::unique_ptr<UcxWorker>> Create(ucp_context_h context,
                                                           const UcxServiceEnv* env,
                                                           ucp_am_recv_callback_t on_request);
  // REQUIRES: Stop() was called if Start() was.
  ~UcxWorker();

  ucp_worker_h handle() const { return worker_; }
  const UcxServiceEnv& env() const { return *env_; }
  // The request layer over env() and the UCX transport's metrics.
  const Requests& requests() const { return requests_; }

  void Start();
  // Force-closes every connection, lets the resulting completions run, joins the thread.
  void Stop();

  // Hands a connection request (from the listener) to this worker's thread.
  void Accept(ucp_conn_request_h request);
  // Requests being served right now (sends and receives not yet complete).
  int64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

  // --- Worker thread only. ---
  // Sends one reply: `header` plus `size` bytes at `data`, which `keep` keeps alive until
  // the send completes; with data == nullptr the body is `body` instead (size ignored).
  // It goes on `ep`, or on conn->reply_ep() when null. Drops the reply if `conn` is closed.
  void Send(const ConnectionPtr& conn, const wire::ucx::ReplyHeader& header, const void* data,
            size_t size, std::string body, storage::ChunkRef keep, ucp_ep_h ep = nullptr);
  // Sends a reply whose body is `status`'s message (on `ep` as for Send).
  void SendError(const ConnectionPtr& conn, wire::ucx::ReplyHeader header,
                 const absl::Status& status, ucp_ep_h ep = nullptr);
  // The connection whose endpoint (either of them) is `ep`, or null.
  ConnectionPtr Find(ucp_ep_h ep) const;
  // The connection named `token` while its Hello succeeded and it is not attached yet, or
  // null.
  ConnectionPtr Unattached(uint64_t token) const;
  // Attaches `request_ep` to the connection named `token` and connects the reply endpoint
  // to `client_address` with peer-failure handling; null when Unattached(token) is null or
  // the endpoint cannot be created.
  ConnectionPtr Attach(uint64_t token, ucp_ep_h request_ep, absl::string_view client_address);
  // Where other threads hand work back to this worker's thread.
  const std::shared_ptr<Mailbox>& mailbox() const { return mailbox_; }
  // This worker's UCP address, which Hello hands to clients.
  const std::string& address() const { return address_; }
  void OpStarted() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void OpEnded() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }
  // Counts a client message or endpoint failure handled: progress that produced none while
  // nothing of ours was in flight was UCX's own housekeeping (see Loop).
  void NoteActivity() { ++activity_; }

 private:
  UcxWorker(const UcxServiceEnv* env, ucp_worker_h worker, int efd);
  void Loop();
  void AcceptNow(ucp_conn_request_h request);
  // A token for a new connection: 64 bits from the kernel's CSPRNG, never 0, unique among
  // live connections (a guessable one let another client attach to it).
  absl::StatusOr<uint64_t> NewToken() const;
  void Close(const ConnectionPtr& conn);
  // Sleeps until the worker's fd signals (true: spin again) or its timeout passes (false).
  // When UCX will not arm: progresses, and naps (false) once no traffic for kBusyGrace.
  bool WaitForEvents();
  // UCX work of ours is under way (requests, reply sends, endpoint closes).
  bool Busy() const;
  // Progresses the worker once; true (and last_traffic_ set) when that handled client
  // traffic or moved work of ours. Progress that reached none of our handlers (a message
  // arriving in fragments, or UCX's own housekeeping such as keepalives) counts for
  // kUnaccountedGrace from the first such progress since our last traffic or sleep, so a
  // multi-fragment message is received at full speed and a keepalive retried forever is not.
  bool Progress();
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  static void OnSendDone(void* request, ucs_status_t status, void* user_data);

  const UcxServiceEnv* const env_;
  const Requests requests_;
  ucp_worker_h worker_;
  const int efd_;  // the worker's event fd
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> in_flight_{0};
  // Reply sends not yet complete (worker thread only). While any is, the thread sleeps at
  // most kSendingSleepMs: a rendezvous reply that moves as active-message fragments (shared
  // memory with peer-failure handling) is pushed only by this worker's progress, and
  // nothing wakes a sleeping sender once the client has drained its queue.
  int64_t sends_in_flight_ = 0;
  uint64_t activity_ = 0;                               // NoteActivity(); worker thread only
  std::chrono::steady_clock::time_point last_traffic_;  // see Progress(); worker thread only
  // Start of the current run of progress that reached none of our handlers; the epoch when
  // none is running (see Progress()). Worker thread only.
  std::chrono::steady_clock::time_point unaccounted_since_;
  std::thread thread_;

  std::string address_;                                       // the worker's UCP address
  absl::flat_hash_map<ucp_ep_h, ConnectionPtr> connections_;  // worker thread only
  absl::flat_hash_map<uint64_t, ConnectionPtr> by_token_;     // worker thread only
  std::vector<void*> closing_;  // ucp_ep_close_nbx requests not yet complete
  const std::shared_ptr<Mailbox> mailbox_;
};

}  // namespace kvstash::server::ucx
