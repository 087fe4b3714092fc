#include "server/ucx/ucx_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/host_port.h"
#include "server/ucx/ucx_requests.h"

namespace kvstash::server::ucx {
namespace {

absl::Status UcsError(absl::string_view what, ucs_status_t s) {
  return absl::UnavailableError(absl::StrCat(what, ": ", ucs_status_string(s)));
}

}  // namespace

absl::Status UcxServerOptions::Validate() const {
  absl::string_view host, port;
  int p = -1;
  if (!SplitHostPort(listen, &host, &port) || host.empty() || !absl::SimpleAtoi(port, &p) ||
      p < 0 || p > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("ucx.listen: expected HOST:PORT, got \"", listen, "\""));
  }
  if (worker_threads < 1 || worker_threads > 64) {
    return absl::InvalidArgumentError("ucx.worker_threads: must be in [1, 64]");
  }
  return absl::OkStatus();
}

UcxServer::UcxServer(const UcxServerOptions& options, std::shared_ptr<UcxContext> context,
                     const UcxServiceEnv& env)
    : options_(options), env_(env), context_(std::move(context)) {}

absl::StatusOr<std::unique_ptr<UcxServer>> UcxServer::Start(const UcxServerOptions& options,
                                                            std::shared_ptr<UcxContext> context,
                                                            const UcxServiceEnv& env) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  std::unique_ptr<UcxServer> server(new UcxServer(options, std::move(context), env));
  if (absl::Status s = server->Init(); !s.ok()) return s;
  if (absl::Status s = server->Listen(); !s.ok()) return s;
  for (auto& w : server->workers_) w->Start();
  return server;
}

absl::Status UcxServer::Init() {
  for (int i = 0; i < options_.worker_threads; ++i) {
    absl::StatusOr<std::unique_ptr<UcxWorker>> w =
        UcxWorker::Create(context_->handle(), &env_, &OnRequestMessage);
    if (!w.ok()) return w.status();
    workers_.push_back(std::move(*w));
  }
  return absl::OkStatus();
}

absl::Status UcxServer::Listen() {
  absl::string_view host, port;
  SplitHostPort(options_.listen, &host, &port);
  const std::string node_name(host), service(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const char* node = (host.empty() || host == "*") ? nullptr : node_name.c_str();
  if (int rc = getaddrinfo(node, service.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("ucx.listen: cannot resolve \"", options_.listen, "\": ", gai_strerror(rc)));
  }
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = found->ai_addr;
  params.sockaddr.addrlen = found->ai_addrlen;
  params.conn_handler.cb = &OnConnectionRequest;
  params.conn_handler.arg = this;
  ucs_status_t s = ucp_listener_create(workers_[0]->handle(), &params, &listener_);
  freeaddrinfo(found);
  if (s != UCS_OK) {
    return absl::UnavailableError(
        absl::StrCat("ucx.listen: cannot listen on ", options_.listen, ": ", ucs_status_string(s)));
  }
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  if (s = ucp_listener_query(listener_, &attr); s != UCS_OK)
    return UcsError("ucp_listener_query", s);
  const auto* sa = reinterpret_cast<const sockaddr*>(&attr.sockaddr);
  port_ = ntohs(sa->sa_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port
                                          : reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  address_ = JoinHostPort(LocalConnectHost(host), port_);
  return absl::OkStatus();
}

void UcxServer::OnConnectionRequest(ucp_conn_request_h request, void* arg) {
  UcxServer* self = static_cast<UcxServer*>(arg);
  UcxWorker* target = self->workers_[self->next_worker_++ % self->workers_.size()].get();
  target->Accept(request);
}

int64_t UcxServer::in_flight() const {
  int64_t n = 0;
  for (const auto& w : workers_) n += w->in_flight();
  return n;
}

void UcxServer::Drain(absl::Time deadline) const {
  while (in_flight() > 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(2));
}

UcxServer::~UcxServer() {
  // Worker 0 first: it runs the listener, which hands connections to the others.
  for (auto& w : workers_) w->Stop();
  if (listener_ != nullptr) ucp_listener_destroy(listener_);
  workers_.clear();
}

}  // namespace kvstash::server::ucx
