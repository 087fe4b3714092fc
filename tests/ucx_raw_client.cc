#include "tests/ucx_raw_client.h"

#include <netdb.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/ucx_setup.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/namespace_spec.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

void OnSent(void* request, ucs_status_t status, void* user_data) {
  --*static_cast<int*>(user_data);
  ucp_request_free(request);
}

void OnEndpointError(void* arg, ucp_ep_h, ucs_status_t) { *static_cast<bool*>(arg) = true; }

}  // namespace

absl::StatusOr<std::unique_ptr<RawUcxClient>> RawUcxClient::Connect(const std::string& address,
                                                                    const std::string& tls,
                                                                    bool peer_errors, bool attach) {
  std::unique_ptr<RawUcxClient> c(new RawUcxClient());
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return absl::InternalError("config");
  if (absl::Status st =
          ucx_setup::ConfigureUcx(tls, ucx_setup::kDefaultTcpSegmentBytes, config).status();
      !st.ok()) {
    ucp_config_release(config);
    return st;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM;
  ucs_status_t s = ucp_init(&params, config, &c->context_);
  ucp_config_release(config);
  if (s != UCS_OK) return absl::UnavailableError(ucs_status_string(s));
  ucp_worker_params_t wp{};
  if ((s = ucp_worker_create(c->context_, &wp, &c->worker_)) != UCS_OK) {
    return absl::UnavailableError(ucs_status_string(s));
  }
  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG;
  am.id = wire::ucx::kReplyAmId;
  am.cb = &OnReply;
  am.arg = c.get();
  ucp_worker_set_am_recv_handler(c->worker_, &am);
  const size_t colon = address.rfind(':');
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), &hints,
                  &found) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot resolve ", address));
  }
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                  UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  ep.sockaddr.addr = found->ai_addr;
  ep.sockaddr.addrlen = found->ai_addrlen;
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = &OnEndpointError;
  ep.err_handler.arg = &c->failed_;
  s = ucp_ep_create(c->worker_, &ep, &c->control_ep_);
  freeaddrinfo(found);
  if (s != UCS_OK) return absl::UnavailableError(ucs_status_string(s));
  c->ep_ = c->control_ep_;
  if (!attach) return c;
  if (absl::Status st = c->Attach(peer_errors); !st.ok()) return st;
  return c;
}

absl::Status RawUcxClient::Attach(bool peer_errors) {
  auto hello = Hello("");
  if (!hello.ok()) return hello.status();
  if (hello->header.code != 0) return absl::InternalError(hello->body);
  if (absl::Status s = SendAttach(token_, peer_errors); !s.ok()) return s;
  auto attached = NextReply(absl::Seconds(30));
  if (!attached.ok()) return attached.status();
  return absl::Status(static_cast<absl::StatusCode>(attached->header.code), attached->body);
}

absl::StatusOr<RawUcxClient::Reply> RawUcxClient::Hello(const std::string& bearer_token) {
  auto hello =
      Call(wire::ucx::Op::kHello, bearer_token.empty() ? "" : wire::ucx::EncodeHello(bearer_token),
           absl::Seconds(30));
  if (!hello.ok() || hello->header.code != 0) return hello;
  wire::ucx::HelloReply reply;
  absl::string_view address;
  if (absl::Status s = wire::ucx::ParseHelloReply(hello->body, &reply, &address); !s.ok()) return s;
  token_ = reply.token;
  daemon_address_ = std::string(address);
  return hello;
}

absl::Status RawUcxClient::SendAttach(uint64_t token, bool peer_errors) {
  if (ep_ == control_ep_) {
    if (daemon_address_.empty()) return absl::FailedPreconditionError("no Hello yet");
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(daemon_address_.data());
    ep.err_mode = peer_errors ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    ep.err_handler.cb = &OnEndpointError;
    ep.err_handler.arg = &failed_;
    ucp_ep_h data_ep = nullptr;
    if (ucs_status_t s = ucp_ep_create(worker_, &ep, &data_ep); s != UCS_OK) {
      return absl::UnavailableError(ucs_status_string(s));
    }
    ep_ = data_ep;
  }
  std::string body(sizeof(token), '\0');
  std::memcpy(body.data(), &token, sizeof(token));
  ucp_address_t* mine = nullptr;
  size_t mine_len = 0;
  if (ucp_worker_get_address(worker_, &mine, &mine_len) != UCS_OK) {
    return absl::InternalError("ucp_worker_get_address");
  }
  body.append(reinterpret_cast<const char*>(mine), mine_len);
  ucp_worker_release_address(worker_, mine);
  wire::ucx::RequestHeader h =
      wire::ucx::MakeRequestHeader(wire::ucx::Op::kAttach, next_id_++, nullptr);
  h.flags = peer_errors ? wire::ucx::kFlagPeerErrorHandling : 0;
  if (absl::Status s = Send(&h, sizeof(h), body.data(), body.size()); !s.ok()) return s;
  while (sends_in_flight_ > 0 && !failed_) ucp_worker_progress(worker_);
  return absl::OkStatus();
}

RawUcxClient::~RawUcxClient() {
  for (ucp_ep_h e : {ep_ != control_ep_ ? ep_ : nullptr, control_ep_}) {
    if (e == nullptr) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* r = ucp_ep_close_nbx(e, &param);
    while (UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS) {
      ucp_worker_progress(worker_);
    }
    if (UCS_PTR_IS_PTR(r)) ucp_request_free(r);
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(5);
  while (sends_in_flight_ > 0 && absl::Now() < give_up) ucp_worker_progress(worker_);
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

ucs_status_t RawUcxClient::OnReply(void* arg, const void* header, size_t header_length, void* data,
                                   size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<RawUcxClient*>(arg);
  Reply r;
  std::memcpy(&r.header, header, std::min(header_length, sizeof(r.header)));
  r.rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (!r.rendezvous) r.body.assign(static_cast<const char*>(data), length);
  self->replies_.push_back(std::move(r));
  return UCS_OK;
}

absl::Status RawUcxClient::Send(const void* header, size_t header_len, const void* data,
                                size_t size) {
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = &OnSent;
  param.user_data = &sends_in_flight_;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
  void* r = ucp_am_send_nbx(ep_, wire::ucx::kRequestAmId, header, header_len, data, size, &param);
  if (UCS_PTR_IS_ERR(r)) return absl::UnavailableError(ucs_status_string(UCS_PTR_STATUS(r)));
  if (r != nullptr) ++sends_in_flight_;
  return absl::OkStatus();
}

absl::StatusOr<RawUcxClient::Reply> RawUcxClient::NextReply(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (replies_.empty()) {
    if (failed_) return absl::UnavailableError("endpoint failed");
    if (absl::Now() >= deadline) return absl::DeadlineExceededError("no reply");
    ucp_worker_progress(worker_);
  }
  Reply r = std::move(replies_.front());
  replies_.pop_front();
  return r;
}

void RawUcxClient::Progress(absl::Duration duration) {
  const absl::Time end = absl::Now() + duration;
  while (absl::Now() < end) ucp_worker_progress(worker_);
}

absl::StatusOr<RawUcxClient::Reply> RawUcxClient::Call(wire::ucx::Op op, const std::string& body,
                                                       absl::Duration timeout) {
  const wire::ucx::RequestHeader h = wire::ucx::MakeRequestHeader(op, next_id_++, nullptr);
  if (absl::Status s = Send(&h, sizeof(h), body.data(), body.size()); !s.ok()) return s;
  return NextReply(timeout);
}

absl::StatusOr<std::string> RawUcxClient::RegisterNamespace(const std::string& model_id) {
  v1::RegisterNamespaceRequest req;
  *req.mutable_spec() = wire::NamespaceToProto(TestNamespace(model_id));
  auto reply = Call(wire::ucx::Op::kRegisterNamespace, req.SerializeAsString(), absl::Seconds(30));
  if (!reply.ok()) return reply.status();
  if (reply->header.code != 0) return absl::InternalError(reply->body);
  v1::RegisterNamespaceResponse resp;
  if (!resp.ParseFromString(reply->body)) return absl::InternalError("bad response");
  return resp.namespace_id();
}

}  // namespace kvstash::testing
