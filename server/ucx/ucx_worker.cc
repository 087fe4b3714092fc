#include "server/ucx/ucx_worker.h"

#include <poll.h>
#include <sched.h>
#include <sys/random.h>

#include <cerrno>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/ucx_setup.h"

namespace kvstash::server::ucx {
namespace {

// How long the thread keeps polling after the last event before it sleeps. A client's
// next message (the next step of a rendezvous, the next request of a loop) usually
// arrives within this, and a wake-up from poll() costs ~200 us on virtual machines
// (measured: 64 KiB get p50 ~230 us with a 50 us spin, ~15-35 us with this one). Polling
// yields the CPU between attempts, so runnable clients on the same cores go first.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(1000);
constexpr auto kYieldSpin = std::chrono::microseconds(50);
constexpr auto kNap = std::chrono::microseconds(20);
// Upper bound of one sleep, so Stop() is noticed even if a wake-up were lost.
constexpr int kSleepMs = 100;
// Upper bound of one sleep while reply sends are in flight (see sends_in_flight_).
constexpr int kSendingSleepMs = 1;
// Pause between attempts while UCX refuses to arm for work of its own that only polling
// moves and that no client traffic accompanies: a keepalive to a client that stopped
// reading its shared-memory queue (a hung process, or one that never progresses an idle
// connection) is retried on every progress call. Spinning on it cost ~25% of a core for as
// long as the client stayed silent. Napping starts only with nothing of ours under way and
// no client traffic for kBusyGrace (a message arriving in pieces keeps arm busy for a
// moment too); a request arriving during a nap waits at most its length.
constexpr auto kBusyGrace = std::chrono::milliseconds(10);
constexpr auto kBusyNap = std::chrono::milliseconds(2);
// How long progress that reaches none of our handlers still counts as traffic (see
// Progress()). The fragments of an eager message move that way until the last one calls
// our handler: not counting them left the worker napping between fragments (a 4 MiB eager
// put over TCP took ~7 ms instead of ~1.5). A message that takes longer than this to
// arrive is received on at the napping pace.
constexpr auto kUnaccountedGrace = std::chrono::milliseconds(20);

// Owns what one reply send needs until UCX is done with it.
struct SendOp {
  wire::ucx::ReplyHeader header;
  std::string body;
  storage::ChunkRef keep;
  ConnectionPtr conn;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UcxWorker>> UcxWorker::Create(ucp_context_h context,
                                                             const UcxServiceEnv* env,
                                                             ucp_am_recv_callback_t on_request) {
  // The worker is progressed by its own thread only, but created and destroyed by the
  // controlling thread: serialized access.
  ucp_worker_h worker = nullptr;
  int efd = -1;
  if (absl::Status st = ucx_setup::CreateWorker(context, &worker, &efd); !st.ok()) return st;
  std::unique_ptr<UcxWorker> w(new UcxWorker(env, worker, efd));
  ucp_address_t* address = nullptr;
  size_t address_len = 0;
  if (ucs_status_t s = ucp_worker_get_address(worker, &address, &address_len); s != UCS_OK) {
    return absl::UnavailableError(absl::StrCat("ucp_worker_get_address: ", ucs_status_string(s)));
  }
  w->address_.assign(reinterpret_cast<const char*>(address), address_len);
  ucp_worker_release_address(worker, address);
  if (absl::Status st =
          ucx_setup::SetWholeMessageHandler(worker, wire::ucx::kRequestAmId, on_request, w.get());
      !st.ok()) {
    return st;
  }
  return w;
}

void Mailbox::SetOwner(std::thread::id owner) {
  absl::MutexLock lock(&mu_);
  owner_ = owner;
}

void Mailbox::Run(Task task) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;  // `task` is destroyed unrun
    if (std::this_thread::get_id() != owner_) {
      tasks_.push_back(std::move(task));
      pending_.store(true, std::memory_order_release);
      ucp_worker_signal(worker_);  // under the lock: Close() cannot let the worker go meanwhile
      return;
    }
  }
  std::move(task)();
}

void Mailbox::RunPending() {
  std::vector<Task> tasks;
  {
    absl::MutexLock lock(&mu_);
    tasks.swap(tasks_);
    pending_.store(false, std::memory_order_relaxed);
  }
  for (Task& task : tasks) std::move(task)();
}

void Mailbox::Close() {
  std::vector<Task> dropped;
  absl::MutexLock lock(&mu_);
  closed_ = true;
  dropped.swap(tasks_);
}

UcxWorker::UcxWorker(const UcxServiceEnv* env, ucp_worker_h worker, int efd)
    : env_(env),
      requests_(env->env, env->metrics, env->version),
      worker_(worker),
      efd_(efd),
      mailbox_(std::make_shared<Mailbox>(worker)) {}

UcxWorker::~UcxWorker() {
  mailbox_->Close();
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
}

void UcxWorker::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void UcxWorker::Stop() {
  stop_.store(true);
  ucp_worker_signal(worker_);
  if (thread_.joinable()) thread_.join();
  mailbox_->RunPending();  // connections handed over after the thread left: accept, then close
  std::vector<ConnectionPtr> all;
  for (auto& [ep, conn] : connections_) all.push_back(conn);
  for (const ConnectionPtr& conn : all) Close(conn);
  // Force-closing fails every outstanding operation; their callbacks free what they hold.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((!closing_.empty() || in_flight() > 0) && std::chrono::steady_clock::now() < give_up) {
    ucp_worker_progress(worker_);
    mailbox_->RunPending();  // gets whose NVMe reads end now: their replies are dropped
    for (size_t i = 0; i < closing_.size();) {
      if (ucp_request_check_status(closing_[i]) != UCS_INPROGRESS) {
        ucp_request_free(closing_[i]);
        closing_[i] = closing_.back();
        closing_.pop_back();
      } else {
        ++i;
      }
    }
  }
}

void UcxWorker::Accept(ucp_conn_request_h request) {
  mailbox_->Run([this, request] { AcceptNow(request); });
}

void UcxWorker::AcceptNow(ucp_conn_request_h request) {
  auto conn = std::make_shared<Connection>();
  conn->worker = this;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.conn_request = request;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &OnEndpointError;
  params.err_handler.arg = conn.get();
  ucs_status_t s = ucp_ep_create(worker_, &params, &conn->ep);
  if (s != UCS_OK) {
    env_->env->log->Warn("ucx: cannot accept a connection", {{"error", ucs_status_string(s)}});
    return;
  }
  absl::StatusOr<uint64_t> token = NewToken();
  if (!token.ok()) {
    env_->env->log->Warn("ucx: refusing a connection", {{"error", token.status().ToString()}});
    ucp_request_param_t close{};
    close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    close.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* request = ucp_ep_close_nbx(conn->ep, &close);
    if (UCS_PTR_IS_PTR(request)) closing_.push_back(request);
    return;
  }
  conn->token = *token;
  connections_[conn->ep] = conn;
  by_token_[conn->token] = conn;
  env_->metrics->CallStarted();  // active_calls approximates connected clients
}

absl::StatusOr<uint64_t> UcxWorker::NewToken() const {
  for (;;) {
    uint64_t token = 0;
    const ssize_t n = getrandom(&token, sizeof(token), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(token))) {
      return absl::InternalError(absl::StrCat("getrandom failed (errno ", errno, ")"));
    }
    if (token != 0 && !by_token_.contains(token)) return token;
  }
}

void UcxWorker::Loop() {
  mailbox_->SetOwner(std::this_thread::get_id());
  auto last_event = std::chrono::steady_clock::now();
  while (!stop_.load(std::memory_order_relaxed)) {
    if (mailbox_->pending()) {
      mailbox_->RunPending();
      last_event = last_traffic_ = std::chrono::steady_clock::now();
    }
    if (Progress()) {
      last_event = std::chrono::steady_clock::now();
      continue;
    }
    const auto idle = std::chrono::steady_clock::now() - last_event;
    if (idle < kSpinBeforeSleep) {
      if (idle < kYieldSpin) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(kNap);
      }
      continue;
    }
    if (WaitForEvents()) last_event = std::chrono::steady_clock::now();
  }
  mailbox_->SetOwner(std::thread::id());  // from now on Stop() runs what arrives
}

bool UcxWorker::Busy() const {
  return in_flight() > 0 || sends_in_flight_ > 0 || !closing_.empty();
}

bool UcxWorker::Progress() {
  // With work of ours under way any progress counts (a rendezvous moves without our
  // callbacks); otherwise what reached our handlers does, and the rest for a while.
  const bool busy = Busy();
  const uint64_t seen = activity_;
  if (ucp_worker_progress(worker_) == 0) return false;
  const auto now = std::chrono::steady_clock::now();
  if (busy || activity_ != seen) {
    last_traffic_ = now;
    unaccounted_since_ = {};
    return true;
  }
  if (unaccounted_since_ == std::chrono::steady_clock::time_point()) unaccounted_since_ = now;
  return now - unaccounted_since_ < kUnaccountedGrace;
}

bool UcxWorker::WaitForEvents() {
  const ucs_status_t s = ucp_worker_arm(worker_);
  if (s == UCS_ERR_BUSY) {
    // Usually events that arrived meanwhile: progress them. Else UCX's own work: spin on
    // while ours is under way or traffic is recent, then nap (the fd cannot tell: unarmed,
    // it may stay readable, so this is a plain sleep).
    if (Progress()) return true;
    if (Busy() || std::chrono::steady_clock::now() - last_traffic_ < kBusyGrace) return true;
    std::this_thread::sleep_for(kBusyNap);
    return false;
  }
  if (s != UCS_OK) {
    env_->env->log->Warn("ucx: ucp_worker_arm failed", {{"error", ucs_status_string(s)}});
    std::this_thread::sleep_for(kBusyNap);
    return false;
  }
  unaccounted_since_ = {};  // armed: UCX had nothing left of its own to do
  pollfd pfd{efd_, POLLIN, 0};
  return poll(&pfd, 1, sends_in_flight_ > 0 ? kSendingSleepMs : kSleepMs) > 0;
}

ConnectionPtr UcxWorker::Find(ucp_ep_h ep) const {
  auto it = connections_.find(ep);
  return it == connections_.end() ? nullptr : it->second;
}

ConnectionPtr UcxWorker::Unattached(uint64_t token) const {
  auto it = by_token_.find(token);
  if (it == by_token_.end()) return nullptr;
  const Connection& conn = *it->second;
  return !conn.hello_done || conn.data_ep != nullptr || conn.closed ? nullptr : it->second;
}

ConnectionPtr UcxWorker::Attach(uint64_t token, ucp_ep_h request_ep,
                                absl::string_view client_address) {
  ConnectionPtr conn = Unattached(token);
  if (conn == nullptr) return nullptr;
  ucp_ep_params_t params{};
  // Peer-failure handling only (the client's Attach said so; UCX needs both directions to
  // agree): without it a client that died mid-transfer left its reservation behind over TCP
  // and aborted the daemon in UCX over shared memory (HandleUnattached refuses such clients).
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(client_address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  if (ucs_status_t s = ucp_ep_create(worker_, &params, &conn->data_ep); s != UCS_OK) {
    conn->data_ep = nullptr;
    env_->env->log->Warn("ucx: cannot connect to a client's worker",
                         {{"error", ucs_status_string(s)}});
    return nullptr;
  }
  conn->request_ep = request_ep;
  connections_[request_ep] = conn;
  return conn;
}

void UcxWorker::OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  Connection* conn = static_cast<Connection*>(arg);
  UcxWorker* self = conn->worker;
  self->NoteActivity();
  self->env_->env->log->Debug("ucx: client connection failed",
                              {{"error", ucs_status_string(status)}});
  ConnectionPtr ptr = self->Find(ep);
  if (ptr != nullptr) self->Close(ptr);
}

void UcxWorker::Close(const ConnectionPtr& conn) {
  if (conn->closed) return;
  conn->closed = true;
  connections_.erase(conn->ep);
  by_token_.erase(conn->token);
  env_->metrics->CallEnded();
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  // request_ep is UCX's own, not ours to close. Force-closing the reply endpoint fails the
  // sends still queued on it (a dead client never completes a rendezvous), which releases
  // the chunks they hold.
  if (conn->request_ep != nullptr) connections_.erase(conn->request_ep);
  for (ucp_ep_h ep : {conn->data_ep, conn->ep}) {
    if (ep == nullptr) continue;
    void* request = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(request)) closing_.push_back(request);
  }
  const size_t direct_ops = conn->reservations.size() + conn->holds.size();
  conn->reservations.clear();
  conn->holds.clear();
  conn->direct_bytes = 0;
  conn->put_calls.clear();  // releases their limiter slots
  for (size_t i = 0; i < direct_ops; ++i) OpEnded();
}

void UcxWorker::Send(const ConnectionPtr& conn, const wire::ucx::ReplyHeader& header,
                     const void* data, size_t size, std::string body, storage::ChunkRef keep,
                     ucp_ep_h ep) {
  if (conn->closed) return;
  auto op = std::make_unique<SendOp>();
  op->header = header;
  op->body = std::move(body);
  op->keep = std::move(keep);
  op->conn = conn;
  if (data == nullptr) {
    data = op->body.data();
    size = op->body.size();
  }
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = &OnSendDone;
  param.user_data = op.get();
  if (ep == nullptr) ep = conn->reply_ep();
  void* request = ucp_am_send_nbx(ep, wire::ucx::kReplyAmId, &op->header, sizeof(op->header), data,
                                  size, &param);
  env_->metrics->AddSentBytes(size + sizeof(header));
  if (request == nullptr) return;  // done already; op is freed here
  if (UCS_PTR_IS_ERR(request)) {
    env_->env->log->Debug("ucx: reply send failed",
                          {{"error", ucs_status_string(UCS_PTR_STATUS(request))}});
    return;
  }
  OpStarted();
  ++sends_in_flight_;
  op.release();  // OnSendDone frees it
}

void UcxWorker::OnSendDone(void* request, ucs_status_t status, void* user_data) {
  std::unique_ptr<SendOp> op(static_cast<SendOp*>(user_data));
  op->conn->worker->OpEnded();
  --op->conn->worker->sends_in_flight_;
  ucp_request_free(request);
}

void UcxWorker::SendError(const ConnectionPtr& conn, wire::ucx::ReplyHeader header,
                          const absl::Status& status, ucp_ep_h ep) {
  header.code = static_cast<int32_t>(status.code());
  std::string message(status.message());
  Send(conn, header, nullptr, 0, std::move(message), nullptr, ep);
}

}  // namespace kvstash::server::ucx
