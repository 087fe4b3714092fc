// HttpEndpoint: the daemon's small HTTP listener (civetweb) for operators and probes:
//   GET /metrics  Prometheus text exposition (Handlers::metrics); with a bearer token
//                 file, only for requests carrying `Authorization: Bearer <token>` (401)
//   GET /healthz  200 "ok" while the process runs
//   GET /readyz   200 "ready" when Handlers::ready() is true, else 503 "not ready"
//   GET /listeners  the daemon's gRPC and UCX addresses (Handlers::listeners; the ready
//                 file's format), so a client pointed at this port can say which it meant
// It serves no files and runs on its own few threads, apart from the data path.
//
//   auto http = HttpEndpoint::Start({.listen = "127.0.0.1:0"}, handlers);
//   int port = (*http)->port();
//
// Thread-safety: handlers run on civetweb's worker threads, possibly concurrently; they
// must be thread-safe and outlive the endpoint. Start/destruction from one thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/metrics/bearer_token_file.h"

struct mg_context;

namespace kvstash::metrics {

struct HttpEndpointOptions {
  // HOST:PORT to listen on; port 0 picks a free port (see port()). civetweb syntax: an
  // IPv6 host is written in brackets, "[::1]:7071".
  std::string listen = "127.0.0.1:7071";
  // Worker threads; scrapes and probes are rare and short, so two are plenty.
  int threads = 2;
  // A request (headers and body) must arrive within this long.
  int request_timeout_ms = 10000;
  // File holding the token /metrics requires (BearerTokenFile); empty: /metrics is open.
  // The probes never require it.
  std::string bearer_token_file;
};

struct HttpHandlers {
  std::function<std::string()> metrics;    // body of /metrics
  std::function<bool()> ready;             // /readyz: true = 200, false = 503
  std::function<std::string()> listeners;  // body of /listeners; unset: 404
};

class HttpEndpoint {
 public:
  // Binds and starts serving. UNAVAILABLE (with civetweb's reason) when the address cannot
  // be bound; INVALID_ARGUMENT when the bearer token file cannot be read.
  static absl::StatusOr<std::unique_ptr<HttpEndpoint>> Start(const HttpEndpointOptions& options,
                                                             HttpHandlers handlers);
  // Stops accepting and waits for in-flight requests.
  ~HttpEndpoint();

  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // The bound port (the chosen one when listen said port 0).
  int port() const { return port_; }
  // "HOST:PORT" a local client connects to (a wildcard host becomes 127.0.0.1).
  std::string connect_address() const;

  const HttpHandlers& handlers() const { return handlers_; }
  // Null when /metrics is open.
  BearerTokenFile* bearer() const { return bearer_.get(); }

 private:
  HttpEndpoint(std::string listen, HttpHandlers handlers)
      : listen_(std::move(listen)), handlers_(std::move(handlers)) {}

  const std::string listen_;
  const HttpHandlers handlers_;
  std::unique_ptr<BearerTokenFile> bearer_;
  mg_context* ctx_ = nullptr;
  int port_ = 0;
};

}  // namespace kvstash::metrics
