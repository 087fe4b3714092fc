// UcxServer: the daemon's UCX data plane. `worker_threads` UcxWorkers on the daemon's UCP
// context (ucx_context.h), and a UCP listener on its own port (config `ucx:`). The listener lives
// on worker 0; accepted connections are spread round robin over the workers.
//
//   auto ucx = UcxServer::Start(options, context, env);   // binds and serves
//   ucx->Drain(deadline);                         // after env draining was set
//   ucx.reset();                                  // closes every connection
//
// Thread-safety: Start/Drain/destruction from one controlling thread; address() and
// in_flight() are thread-safe.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/ucx_setup.h"
#include "server/ucx/ucx_context.h"
#include "server/ucx/ucx_options.h"
#include "server/ucx/ucx_worker.h"

namespace kvstash::server::ucx {

class UcxServer {
 public:
  // Creates the workers on `context` (made from the same options), binds the listener and
  // starts the threads. UNAVAILABLE names what failed (address in use, ...).
  static absl::StatusOr<std::unique_ptr<UcxServer>> Start(const UcxServerOptions& options,
                                                          std::shared_ptr<UcxContext> context,
                                                          const UcxServiceEnv& env);
  // Stops the listener and the workers (force-closing connections).
  ~UcxServer();

  // "HOST:PORT" a client on this host connects to (a wildcard host becomes 127.0.0.1).
  std::string address() const { return address_; }
  int port() const { return port_; }
  // Waits until no request is in flight or `deadline` passes. REQUIRES: the env's
  // draining flag is set (new requests are refused).
  void Drain(absl::Time deadline) const;
  int64_t in_flight() const;

 private:
  UcxServer(const UcxServerOptions& options, std::shared_ptr<UcxContext> context,
            const UcxServiceEnv& env);
  absl::Status Init();
  absl::Status Listen();
  static void OnConnectionRequest(ucp_conn_request_h request, void* arg);

  const UcxServerOptions options_;
  const UcxServiceEnv env_;
  const std::shared_ptr<UcxContext> context_;  // outlives the workers
  std::vector<std::unique_ptr<UcxWorker>> workers_;
  ucp_listener_h listener_ = nullptr;
  size_t next_worker_ = 0;  // listener callback (worker 0's thread) only
  std::string address_;
  int port_ = 0;
};

}  // namespace kvstash::server::ucx
