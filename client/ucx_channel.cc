#include "client/ucx_channel.h"

#include <poll.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/ucx_call.h"
#include "common/streaming_copy.h"
#include "common/ucx_setup.h"
#include "proto/status_map.h"

namespace kvstash::client_internal {
namespace {

using wire::ucx::ReplyHeader;
using WireOp = wire::ucx::Op;

// How long a waiting caller keeps polling before it sleeps on the worker's event fd. A
// reply (or the next step of a rendezvous) usually arrives within this, while a wake-up
// from poll() costs ~200 us on virtual machines. Polling yields between attempts, so the
// daemon and other callers sharing the cores still run.
constexpr auto kSpin = std::chrono::microseconds(1000);
constexpr int64_t kMaxSleepMs = 100;

struct RecvOp {
  UcxChannel* channel;
  std::function<void(ucs_status_t)> done;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UcxChannel>> UcxChannel::Connect(
    ucp_context_h context, const sockaddr* addr, socklen_t addr_len, bool direct,
    uint64_t tcp_segment_bytes, const std::string& token, ParallelCopier* copier,
    absl::Time deadline) {
  ucp_worker_h worker = nullptr;  // one caller at a time, any thread
  int efd = -1;
  if (absl::Status s = ucx_setup::CreateWorker(context, &worker, &efd); !s.ok()) return s;
  std::unique_ptr<UcxChannel> ch(new UcxChannel(worker, efd, copier));
  if (absl::Status s = ucx_setup::SetWholeMessageHandler(worker, wire::ucx::kReplyAmId,
                                                         &OnReplyMessage, ch.get());
      !s.ok()) {
    return s;
  }
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                  UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  ep.sockaddr.addr = addr;
  ep.sockaddr.addrlen = addr_len;
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = &OnEndpointError;
  ep.err_handler.arg = ch.get();
  if (ucs_status_t s = ucp_ep_create(worker, &ep, &ch->control_ep_); s != UCS_OK) {
    ch->control_ep_ = nullptr;
    return absl::UnavailableError(absl::StrCat("ucp_ep_create: ", ucs_status_string(s)));
  }
  ch->ep_ = ch->control_ep_;
  if (absl::Status st = ch->Handshake(direct, tcp_segment_bytes, token, deadline); !st.ok()) {
    return st;
  }
  return ch;
}

absl::Status UcxChannel::Handshake(bool direct, uint64_t tcp_segment_bytes,
                                   const std::string& bearer_token, absl::Time deadline) {
  absl::StatusOr<std::string> reply =
      Unary(WireOp::kHello, nullptr, wire::ucx::EncodeHello(bearer_token), deadline);
  if (!reply.ok()) return reply.status();
  wire::ucx::HelloReply hello;
  absl::string_view address;
  if (absl::Status st = wire::ucx::ParseHelloReply(*reply, &hello, &address); !st.ok()) return st;
  const uint64_t token = hello.token;
  // UCX aborts whichever side receives a TCP fragment larger than its own segment: never
  // send one, and never ask for one (0: the daemon does not say).
  if (hello.tcp_segment_bytes != 0 && hello.tcp_segment_bytes != tcp_segment_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the daemon's UCX TCP segment is ", hello.tcp_segment_bytes, " bytes, this client's ",
        tcp_segment_bytes,
        "; they must match (ucx.tcp_segment_bytes on the daemon, "
        "ClientOptions::ucx_tcp_segment_bytes here; UCX_TCP_RX_SEG_SIZE overrides either)"));
  }
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(address.data());
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = &OnEndpointError;
  ep.err_handler.arg = this;
  ucp_ep_h data = nullptr;
  if (ucs_status_t s = ucp_ep_create(worker_, &ep, &data); s != UCS_OK) {
    return absl::UnavailableError(absl::StrCat("ucp_ep_create (data): ", ucs_status_string(s)));
  }
  ep_ = data;
  // Attach: the token, then this worker's address for the daemon's reply endpoint.
  ucp_address_t* mine = nullptr;
  size_t mine_len = 0;
  if (ucs_status_t s = ucp_worker_get_address(worker_, &mine, &mine_len); s != UCS_OK) {
    return absl::UnavailableError(absl::StrCat("ucp_worker_get_address: ", ucs_status_string(s)));
  }
  std::string body(sizeof(token), '\0');
  std::memcpy(body.data(), &token, sizeof(token));
  body.append(reinterpret_cast<const char*>(mine), mine_len);
  ucp_worker_release_address(worker_, mine);
  const uint16_t flags = wire::ucx::kFlagPeerErrorHandling | (direct ? wire::ucx::kFlagDirect : 0);
  absl::StatusOr<std::string> arena = Unary(WireOp::kAttach, nullptr, body, deadline, flags);
  if (!arena.ok()) return arena.status();
  if (direct) MapArena(*arena);
  return absl::OkStatus();
}

UcxChannel::UcxChannel(ucp_worker_h worker, int efd, ParallelCopier* copier)
    : worker_(worker), efd_(efd), copier_(copier) {}

UcxChannel::~UcxChannel() {
  if (arena_rkey_ != nullptr) ucp_rkey_destroy(arena_rkey_);
  std::vector<void*> closing;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  for (ucp_ep_h ep : {ep_ != control_ep_ ? ep_ : nullptr, control_ep_}) {
    if (ep == nullptr) continue;
    void* r = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_PTR(r)) closing.push_back(r);
  }
  // Force-closing fails every outstanding operation; wait until UCX let go of the buffers.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    ucp_worker_progress(worker_);
    bool closed = true;
    for (void* r : closing) closed = closed && ucp_request_check_status(r) != UCS_INPROGRESS;
    if (closed && outstanding_ == 0) break;
  }
  for (void* r : closing) ucp_request_free(r);
  ucp_worker_destroy(worker_);
}

void UcxChannel::OnEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  UcxChannel* self = static_cast<UcxChannel*>(arg);
  self->broken_ = true;
  self->broken_reason_ = absl::StrCat("connection to kvstashd lost: ", ucs_status_string(status));
}

absl::Status UcxChannel::SendRequest(const void* header, size_t header_len, const void* data,
                                     size_t size, ucp_mem_h memh) {
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = &OnSent;
  param.user_data = this;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
  if (memh != nullptr) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = memh;
  }
  void* request =
      ucp_am_send_nbx(ep_, wire::ucx::kRequestAmId, header, header_len, data, size, &param);
  if (request == nullptr) return absl::OkStatus();
  if (UCS_PTR_IS_ERR(request)) {
    broken_ = true;
    broken_reason_ =
        absl::StrCat("send to kvstashd failed: ", ucs_status_string(UCS_PTR_STATUS(request)));
    return absl::UnavailableError(broken_reason_);
  }
  ++outstanding_;
  ++sends_in_flight_;
  return absl::OkStatus();
}

void UcxChannel::OnSent(void* request, ucs_status_t status, void* user_data) {
  UcxChannel* self = static_cast<UcxChannel*>(user_data);
  --self->outstanding_;
  --self->sends_in_flight_;
  if (status != UCS_OK && !self->broken_) {
    self->broken_ = true;
    self->broken_reason_ = absl::StrCat("send to kvstashd failed: ", ucs_status_string(status));
  }
  ucp_request_free(request);
}

void UcxChannel::ProgressIdle() {
  // The last call is over (its sends complete, every reply in): anything more claiming to
  // answer it is dropped, never written into buffers the caller has taken back.
  call_.reset();
  // Bounded: a daemon that keeps sending cannot hold the pool's lock for long.
  for (int i = 0; i < 64 && ucp_worker_progress(worker_) != 0; ++i) {
  }
}

absl::Status UcxChannel::WaitFor(const std::function<bool()>& done, absl::Time deadline) {
  auto spin_until = std::chrono::steady_clock::now() + kSpin;
  while (!done() || outstanding_ > 0) {
    if (broken_) return absl::UnavailableError(broken_reason_);
    if (ucp_worker_progress(worker_) != 0) continue;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      broken_ = true;  // replies may still arrive into caller buffers: drop the channel
      broken_reason_ = "deadline exceeded";
      return absl::DeadlineExceededError("kvstashd did not answer over UCX before the deadline");
    }
    if (sends_in_flight_ > 0 || std::chrono::steady_clock::now() < spin_until) {
      sched_yield();
      continue;
    }
    const ucs_status_t s = ucp_worker_arm(worker_);
    if (s == UCS_ERR_BUSY) continue;
    pollfd pfd{efd_, POLLIN, 0};
    poll(&pfd, 1, static_cast<int>(std::min(kMaxSleepMs, absl::ToInt64Milliseconds(left) + 1)));
    spin_until = std::chrono::steady_clock::now() + kSpin;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> UcxChannel::Unary(WireOp op, const Key128* ns, const std::string& body,
                                              absl::Time deadline, uint16_t flags) {
  call_ = std::make_unique<Call>();
  call_->op = static_cast<uint8_t>(op);
  call_->id = next_request_id_++;
  wire::ucx::RequestHeader h =
      wire::ucx::MakeRequestHeader(op, call_->id, ns != nullptr ? ns->data() : nullptr);
  h.flags = flags;
  if (absl::Status s = SendRequest(&h, sizeof(h), body.data(), body.size(), nullptr); !s.ok()) {
    return s;
  }
  if (absl::Status s = WaitFor([this] { return call_->replied; }, deadline); !s.ok()) return s;
  if (!call_->status.ok()) return call_->status;
  return std::move(call_->body);
}

ucs_status_t UcxChannel::OnReplyMessage(void* arg, const void* header, size_t header_length,
                                        void* data, size_t length,
                                        const ucp_am_recv_param_t* param) {
  UcxChannel* self = static_cast<UcxChannel*>(arg);
  ReplyHeader h;
  if (absl::Status s = wire::ucx::ParseReplyHeader(header, header_length, &h); !s.ok()) {
    self->broken_ = true;
    self->broken_reason_ = std::string(s.message());
    return UCS_OK;
  }
  if (self->call_ == nullptr || h.request_id != self->call_->id || h.op != self->call_->op) {
    return UCS_OK;  // a reply to an abandoned call: drop it
  }
  ucs_status_t result = UCS_OK;
  self->OnReply(h, data, length, param, &result);
  return result;
}

void UcxChannel::OnReply(const ReplyHeader& h, void* data, size_t length,
                         const ucp_am_recv_param_t* param, ucs_status_t* result) {
  Call& c = *call_;
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (h.op == static_cast<uint8_t>(WireOp::kGet)) return OnGetReply(h, data, length, param, result);
  if (h.op == static_cast<uint8_t>(WireOp::kPut)) return OnPutReply(h, data, length, param, result);
  if (h.code != 0) {
    c.status = ErrorOf(h, data, length, rndv);
    c.replied = true;
    return;
  }
  c.body.resize(length);
  ReceiveInto(
      data, c.body.data(), length, rndv, nullptr, [this](ucs_status_t) { call_->replied = true; },
      result);
}

void UcxChannel::WithBody(void* data, size_t length, bool rndv,
                          std::function<void(absl::string_view)> fn, ucs_status_t* result) {
  if (!rndv) {
    fn(absl::string_view(static_cast<const char*>(data), length));
    return;
  }
  auto body = std::make_shared<std::string>(length, '\0');
  ReceiveInto(
      data, body->data(), length, true, nullptr,
      [body, fn = std::move(fn)](ucs_status_t s) {
        if (s == UCS_OK) fn(*body);
      },
      result);
}

void UcxChannel::ReceiveInto(void* desc, void* dst, size_t length, bool rndv, ucp_mem_h memh,
                             std::function<void(ucs_status_t)> done, ucs_status_t* result) {
  if (!rndv) {
    if (length > 0) CopyBytes(dst, desc, length);
    done(UCS_OK);
    *result = UCS_OK;
    return;
  }
  auto op = std::make_unique<RecvOp>(RecvOp{this, std::move(done)});
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.recv_am = &OnReceived;
  param.user_data = op.get();
  if (memh != nullptr) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = memh;
  }
  void* request = ucp_am_recv_data_nbx(worker_, desc, dst, length, &param);
  *result = UCS_INPROGRESS;
  if (request == nullptr) {
    op->done(UCS_OK);
  } else if (UCS_PTR_IS_ERR(request)) {
    op->done(UCS_PTR_STATUS(request));
  } else {
    ++outstanding_;
    op.release();  // OnReceived frees it
  }
}

void UcxChannel::OnReceived(void* request, ucs_status_t status, size_t, void* user_data) {
  std::unique_ptr<RecvOp> op(static_cast<RecvOp*>(user_data));
  --op->channel->outstanding_;
  op->done(status);
  ucp_request_free(request);
}

}  // namespace kvstash::client_internal
