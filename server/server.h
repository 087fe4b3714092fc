// Server: one kvstashd instance — its chunk store, namespace registry and gRPC listener.
//
//   auto server = Server::Create(config, &log);   // reserves the DRAM arena
//   (*server)->Start();                            // binds and serves
//   ... (*server)->Shutdown(absl::Seconds(10));    // drains, then cancels the rest
//
// Thread-safety: Create/Start/Shutdown are called by one controlling thread; the service
// runs on gRPC's threads. store() and registry() are thread-safe objects.
#pragma once

#include <grpcpp/server.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/ready_file.h"
#include "server/auth/authenticator.h"
#include "server/auth/call_limiter.h"
#include "server/cluster_member.h"
#include "server/config.h"
#include "server/grpc/delivery_gate.h"
#include "server/grpc/grpc_service.h"
#include "server/local/arena_server.h"
#include "server/local_listener.h"
#include "server/log.h"
#include "server/metrics/http_server.h"
#include "server/metrics/registry.h"
#include "server/namespace_registry.h"
#include "server/service_env.h"
#include "server/ucx/ucx_server.h"
#include "storage/chunk_store.h"

namespace kvstash::server {

class Server {
 public:
  // Creates the store from `config` (this reserves the DRAM arena). `log` must outlive
  // the server.
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerConfig& config, Logger* log);
  // Shuts down with no grace period if still serving.
  ~Server();

  // Binds server.grpc_listen (and server.local_socket) and starts serving, then (metrics.enabled)
  // the HTTP endpoint on metrics.listen, then (cluster.enabled) registers in the cluster.
  // UNAVAILABLE when an address cannot be bound.
  absl::Status Start();
  // Marks the daemon draining (new calls get UNAVAILABLE, Health says DRAINING), stops
  // accepting, lets in-flight calls run for up to `grace`, cancels the rest and returns
  // once every call is done. Idempotent.
  void Shutdown(absl::Duration grace);

  // The bound port (the chosen one when the config said port 0). REQUIRES: Start() ok.
  int selected_port() const { return selected_port_; }
  // Where a client on this host connects, e.g. "127.0.0.1:7070" (a wildcard listen host
  // becomes 127.0.0.1), or "unix:/path". REQUIRES: Start() ok.
  std::string connect_address() const;

  // The listeners as bound (a wildcard host kept, so a remote reader substitutes the host it
  // reached), as the metrics endpoint's /listeners publishes them.
  // REQUIRES: Start() ok.
  ReadyInfo BoundListenerInfo() const;
  // "HOST:PORT" of the UCX listener, or "" when UCX is disabled or not started.
  std::string ucx_address() const { return ucx_ == nullptr ? "" : ucx_->address(); }
  // "HOST:PORT" of the /metrics endpoint, or "" when metrics are disabled or not started.
  std::string metrics_address() const;
  // /readyz: the tiers are open (the store exists), the gRPC listener is up and the
  // daemon is not draining. Thread-safe.
  bool ready() const;
  // Reads the token file again (SIGHUP); on error the previous tokens stay and the error
  // is returned. The authenticator logs the outcome. Thread-safe.
  absl::Status ReloadAuth() { return auth_->Reload(); }
  // What /metrics serves: every collector's families as Prometheus text. Thread-safe.
  std::string ScrapeMetrics() const { return metrics_.Scrape(); }

  const ServerConfig& config() const { return config_; }
  storage::ChunkStore* store() { return store_.get(); }
  NamespaceRegistry* registry() { return &registry_; }

 private:
  Server(const ServerConfig& config, Logger* log, std::unique_ptr<storage::ChunkStore> store,
         std::unique_ptr<auth::Authenticator> auth);
  void LogStartup() const;
  // Registers the metric collectors and starts the HTTP endpoint when enabled.
  absl::Status StartMetrics();
  // Starts the UCX data plane when ucx.enabled.
  absl::Status StartUcx();
  // Registers the daemon in its cluster when cluster.enabled (the ports are bound).
  absl::Status StartCluster();
  // Serves the local arena socket when server.local_socket is set and the arena is shared
  // memory a descriptor can reach; logs why not otherwise.
  absl::Status StartLocalArena();
  // While Shutdown waits for gRPC, disconnects the connections once no call has been in
  // flight for a moment: gRPC otherwise waits for every idle client to acknowledge its
  // GOAWAY, and an idle gRPC C++ client reads its connection only from a backup poller
  // that runs every 5 s. Returns at `deadline` or when `stopped` is notified.
  void CloseIdleConnections(absl::Time deadline, absl::Notification* stopped);
  // Logs whether calls are authenticated; loudly when they are not.
  void LogAuthStartup() const;
  // Logs the NVMe tier's directory, budget and what start-up recovered from it.
  void LogNvmeStartup() const;
  // Warns about a listener other hosts reach without protection (docs/security.md).
  void LogExposure() const;

  const ServerConfig config_;
  Logger* const log_;
  // Who may call and how often. Declared before everything that serves calls (the store
  // included: its reads still in flight at the end hold call slots), whose call slots
  // must be gone before the limiter.
  const std::unique_ptr<auth::Authenticator> auth_;
  auth::CallLimiter limiter_;
  // Declared before the gRPC server so it is destroyed after it: sent slices may still
  // reference stored chunks until the gRPC server is gone.
  std::unique_ptr<storage::ChunkStore> store_;
  NamespaceRegistry registry_;
  ServiceEnv env_;
  // The gRPC transport's request metrics, and its delivery gate; both outlive the gRPC
  // server: reactors hand the gate their last step until the server is gone.
  TransportMetrics grpc_metrics_{"grpc"};
  DeliveryGate delivery_gate_;
  KvStashService service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  // Serves server.local_socket into grpc_server_; null when none. Stopped first.
  std::unique_ptr<LocalListener> local_listener_;
  // The local arena socket beside it (ArenaServer) and its request metrics; null unless
  // a local socket is served and the arena is shared memory. Stopped after the other
  // transports drained, so no chunk a client still copies is freed while they write.
  TransportMetrics local_metrics_{"local"};
  std::unique_ptr<ArenaServer> arena_server_;
  // The UCX transport's request metrics, and its server; declared after the store so it
  // is destroyed first (its sends hold stored chunks).
  TransportMetrics ucx_metrics_{"ucx"};
  // The UCP context, made before the store when ucx.enabled (the arena may live in its
  // shared memory); the arena's region when it does (owned by the store), else null.
  std::shared_ptr<ucx::UcxContext> ucx_context_;
  const ucx::SharedRegion* shared_arena_ = nullptr;
  std::unique_ptr<ucx::UcxServer> ucx_;
  int selected_port_ = 0;
  bool shut_down_ = false;
  std::atomic<bool> serving_{false};  // set once the gRPC listener is up
  // Cluster membership when cluster.enabled, else null; outlives the metrics endpoint
  // whose collector reads it.
  std::unique_ptr<ClusterMember> cluster_;
  std::atomic<const ClusterMember*> cluster_view_{nullptr};  // cluster_, for scrapes
  metrics::Registry metrics_;
  std::unique_ptr<metrics::HttpEndpoint> http_;  // null when metrics are disabled
  // How long opening the store took (with the NVMe tier: mostly the index rebuild).
  absl::Duration store_open_time_;
};

// Writes `lines` ("key=value\n" each) to `path` atomically: a reader sees no file or the
// whole file, never a partial one.
absl::Status WriteFileAtomically(const std::string& path, const std::string& contents);

}  // namespace kvstash::server
