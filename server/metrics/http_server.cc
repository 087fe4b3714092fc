#include "server/metrics/http_server.h"

#include <civetweb.h>

#include <cstring>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/metrics/exposition.h"

namespace kvstash::metrics {
namespace {

void InitLibraryOnce() {
  static std::once_flag once;
  std::call_once(once, [] { mg_init_library(0); });
}

const char* Reason(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 401:
      return "Unauthorized";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// `extra_headers`: further header lines, each ending in CRLF.
int Send(mg_connection* conn, int code, const char* content_type, const std::string& body,
         const char* extra_headers = "") {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n",
            code, Reason(code), content_type, body.size(), extra_headers);
  if (strcmp(mg_get_request_info(conn)->request_method, "HEAD") != 0) {
    mg_write(conn, body.data(), body.size());
  }
  return code;
}

const HttpHandlers& HandlersOf(void* cbdata) {
  return static_cast<const HttpEndpoint*>(cbdata)->handlers();
}

int ServeMetrics(mg_connection* conn, void* cbdata) {
  BearerTokenFile* bearer = static_cast<const HttpEndpoint*>(cbdata)->bearer();
  if (bearer != nullptr && !bearer->Accepts(mg_get_header(conn, "Authorization"))) {
    return Send(conn, 401, "text/plain", "a valid bearer token is required\n",
                "WWW-Authenticate: Bearer realm=\"kvstash metrics\"\r\n");
  }
  return Send(conn, 200, kTextContentType, HandlersOf(cbdata).metrics());
}

int ServeHealthz(mg_connection* conn, void*) { return Send(conn, 200, "text/plain", "ok\n"); }

int ServeReadyz(mg_connection* conn, void* cbdata) {
  const bool ready = HandlersOf(cbdata).ready();
  return Send(conn, ready ? 200 : 503, "text/plain", ready ? "ready\n" : "not ready\n");
}

int ServeListeners(mg_connection* conn, void* cbdata) {
  const HttpHandlers& h = HandlersOf(cbdata);
  if (!h.listeners) return Send(conn, 404, "text/plain", "not found\n");
  return Send(conn, 200, "text/plain", h.listeners());
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(
    const HttpEndpointOptions& options, HttpHandlers handlers) {
  InitLibraryOnce();
  std::unique_ptr<HttpEndpoint> endpoint(new HttpEndpoint(options.listen, std::move(handlers)));
  if (!options.bearer_token_file.empty()) {
    absl::StatusOr<std::unique_ptr<BearerTokenFile>> bearer =
        BearerTokenFile::Open(options.bearer_token_file);
    if (!bearer.ok()) return bearer.status();
    endpoint->bearer_ = std::move(*bearer);
  }
  const std::string threads = absl::StrCat(options.threads);
  const std::string timeout = absl::StrCat(options.request_timeout_ms);
  const char* config[] = {"listening_ports",
                          options.listen.c_str(),
                          "num_threads",
                          threads.c_str(),
                          "request_timeout_ms",
                          timeout.c_str(),
                          "enable_keep_alive",
                          "no",
                          nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };  // quiet
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.configuration_options = config;
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text, sizeof(error_text)};
  endpoint->ctx_ = mg_start2(&init, &error);
  if (endpoint->ctx_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", options.listen, ": ", error_text));
  }
  mg_server_port ports[4] = {};
  if (mg_get_server_ports(endpoint->ctx_, 4, ports) < 1) {
    return absl::UnavailableError(absl::StrCat("no HTTP port bound for ", options.listen));
  }
  endpoint->port_ = ports[0].port;
  mg_set_request_handler(endpoint->ctx_, "/metrics$", ServeMetrics, endpoint.get());
  mg_set_request_handler(endpoint->ctx_, "/healthz$", ServeHealthz, endpoint.get());
  mg_set_request_handler(endpoint->ctx_, "/readyz$", ServeReadyz, endpoint.get());
  mg_set_request_handler(endpoint->ctx_, "/listeners$", ServeListeners, endpoint.get());
  return endpoint;
}

HttpEndpoint::~HttpEndpoint() {
  if (ctx_ != nullptr) mg_stop(ctx_);
}

std::string HttpEndpoint::connect_address() const {
  std::string host = listen_.substr(0, listen_.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "*") host = "127.0.0.1";
  return absl::StrCat(host, ":", port_);
}

}  // namespace kvstash::metrics
