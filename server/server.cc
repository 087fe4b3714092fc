#include "server/server.h"

#include <fcntl.h>
#include <grpc/grpc.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_posix.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <thread>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/byte_size.h"
#include "common/host_port.h"
#include "common/mapped_file.h"
#include "common/ready_file.h"
#include "common/unix_socket.h"
#include "server/grpc/tls_credentials.h"
#include "server/local_listener.h"
#include "server/store_metrics.h"
#include "storage/nvme/rocksdb_crc32c.h"

#ifndef KVSTASH_VERSION
#define KVSTASH_VERSION "unknown"
#endif

namespace kvstash::server {
namespace {

// Room for a frame's non-payload fields on top of max_frame_bytes.
constexpr int kFrameOverheadBytes = 64 << 10;

ServiceLimits LimitsOf(const GrpcConfig& c) {
  ServiceLimits l;
  l.max_frame_bytes = c.max_frame_bytes;
  l.send_frame_bytes = c.send_frame_bytes;
  l.max_keys_per_request = c.max_keys_per_request;
  l.max_ttl_ms = static_cast<uint32_t>(c.max_ttl_ms);
  return l;
}

// Kernel-reported huge page use of this process (/proc/self/smaps_rollup): what the memory
// actually got, as opposed to the configured mode. Pages count once touched, so the
// shutdown line shows what the arena ended up with.
std::string HugePageUsage() {
  std::ifstream in("/proc/self/smaps_rollup");
  uint64_t thp_kb = 0, hugetlb_kb = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint64_t kb = 0;
    if (parts.size() < 2 || !absl::SimpleAtoi(parts[1], &kb)) continue;
    if (parts[0] == "AnonHugePages:") thp_kb += kb;
    if (absl::EndsWith(parts[0], "_Hugetlb:")) hugetlb_kb += kb;
  }
  if (!in.eof()) return "unknown";
  return absl::StrCat("hugetlb=", FormatByteSize(hugetlb_kb << 10),
                      ",thp=", FormatByteSize(thp_kb << 10));
}

// How gRPC is protected, for the start-up line: "off", "tls" or "mutual".
const char* TlsMode(const TlsConfig& tls) {
  if (!tls.enabled()) return "off";
  return tls.client_ca_file.empty() ? "tls" : "mutual";
}

ucx::UcxServerOptions UcxOptionsOf(const ServerConfig& config) {
  const UcxConfig& c = config.ucx;
  ucx::UcxServerOptions options;
  options.listen = c.listen;
  options.tls = c.tls;
  options.rndv_thresh_bytes = c.rndv_thresh_bytes;
  options.tcp_segment_bytes = c.tcp_segment_bytes;
  options.worker_threads = c.worker_threads;
  options.arena_as_file = !config.server.local_socket.empty();
  return options;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerConfig& config, Logger* log) {
  // RocksDB creates only the last path component; the data dir may not exist yet.
  if (const std::string nvme = config.NvmePath(); !nvme.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(nvme, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("storage.nvme.path: cannot create ", nvme, ": ", ec.message()));
    }
  }
  // Before the store: a bad token file is a bad configuration, refused before the arena.
  absl::StatusOr<std::unique_ptr<auth::Authenticator>> auth =
      auth::Authenticator::Create(config.auth, log);
  if (!auth.ok()) {  // missing or malformed alike: a setting to fix (exit 2)
    return absl::InvalidArgumentError(absl::StrCat("auth.token_file: ", auth.status().message()));
  }
  const absl::Time begin = absl::Now();
  storage::ChunkStoreOptions store_options = config.ToChunkStoreOptions();
  std::shared_ptr<ucx::UcxContext> ucx_context;
  const ucx::SharedRegion* shared_arena = nullptr;
  if (config.ucx.enabled) {
    absl::StatusOr<std::shared_ptr<ucx::UcxContext>> c =
        ucx::UcxContext::Create(UcxOptionsOf(config), log);
    if (!c.ok())
      return absl::Status(c.status().code(), absl::StrCat("ucx: ", c.status().message()));
    ucx_context = *std::move(c);
  }
  if (ucx_context != nullptr && config.ucx.direct_access) {
    store_options.dram_memory = [&](uint64_t bytes) -> std::unique_ptr<storage::ArenaMemory> {
      std::unique_ptr<ucx::SharedRegion> region = ucx_context->AllocateShared(bytes);
      shared_arena = region.get();
      return region;
    };
  }
  absl::StatusOr<std::unique_ptr<storage::ChunkStore>> store =
      storage::ChunkStore::Create(store_options);
  if (!store.ok()) return store.status();
  std::unique_ptr<Server> server(new Server(config, log, std::move(*store), *std::move(auth)));
  server->store_open_time_ = absl::Now() - begin;
  server->ucx_context_ = std::move(ucx_context);
  server->shared_arena_ = shared_arena;
  return server;
}

Server::Server(const ServerConfig& config, Logger* log, std::unique_ptr<storage::ChunkStore> store,
               std::unique_ptr<auth::Authenticator> auth)
    : config_(config),
      log_(log),
      auth_(std::move(auth)),
      store_(std::move(store)),
      service_(&env_, &grpc_metrics_, &delivery_gate_, KVSTASH_VERSION) {
  env_.store = store_.get();
  env_.auth = auth_.get();
  env_.limiter = &limiter_;
  env_.registry = &registry_;
  env_.log = log_;
  env_.limits = LimitsOf(config_.server);
}

Server::~Server() { Shutdown(absl::ZeroDuration()); }

absl::Status Server::Start() {
  const GrpcConfig& c = config_.server;
  const int message_limit = static_cast<int>(c.max_frame_bytes) + kFrameOverheadBytes;
  // A flow-control window of a few frames lets a stream run at full speed without waiting
  // for window updates; BDP probing would otherwise keep resizing it (measured: +5-10%).
  const int window = static_cast<int>(
      std::min<uint64_t>(1u << 30, std::max<uint64_t>(8u << 20, 2 * c.max_frame_bytes)));
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(c.tls);
  if (!credentials.ok()) return credentials.status();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(c.grpc_listen, *credentials, &selected_port_);
  builder.RegisterService(&service_);
  builder.SetMaxReceiveMessageSize(message_limit);
  builder.SetMaxSendMessageSize(message_limit);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  // gRPC sets SO_REUSEPORT by default: a second daemon on the same port would then start
  // and silently take half the connections to a different cache. Fail to bind instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, window);
  grpc_server_ = builder.BuildAndStart();
  if (grpc_server_ == nullptr || selected_port_ == 0) {
    grpc_server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", c.grpc_listen));
  }
  if (!c.local_socket.empty()) {
    // Mode 0666: who reaches the directory may connect; the directory's mode and auth decide.
    absl::StatusOr<std::unique_ptr<LocalListener>> local = LocalListener::Start(
        c.local_socket,
        [server = grpc_server_.get()](int fd) { grpc::AddInsecureChannelFromFd(server, fd); },
        LocalListener::Options{});
    if (!local.ok()) {
      return absl::Status(local.status().code(),
                          absl::StrCat("server.local_socket: ", local.status().message()));
    }
    local_listener_ = *std::move(local);
  }
  env_.start_time = absl::Now();
  if (absl::Status s = StartUcx(); !s.ok()) return s;
  if (absl::Status s = StartLocalArena(); !s.ok()) return s;
  serving_.store(true);
  if (absl::Status s = StartMetrics(); !s.ok()) return s;
  LogStartup();
  return StartCluster();
}

absl::Status Server::StartCluster() {
  if (!config_.cluster.enabled) return absl::OkStatus();
  BoundListeners bound{config_.server.grpc_listen, selected_port_, ucx_address()};
  absl::StatusOr<cluster::Member> self = SelfMember(config_, bound, HostName(), env_.start_time);
  if (!self.ok()) return self.status();
  absl::StatusOr<std::unique_ptr<ClusterMember>> member =
      ClusterMember::Start(config_.cluster, *std::move(self), config_.server.tls, log_);
  if (!member.ok()) return member.status();
  cluster_ = *std::move(member);
  cluster_view_.store(cluster_.get());
  return absl::OkStatus();
}

absl::Status Server::StartLocalArena() {
  if (config_.server.local_socket.empty()) return absl::OkStatus();
  if (shared_arena_ == nullptr) {
    log_->Info(
        "local arena not served: the DRAM arena is not shared memory (it is with "
        "ucx.enabled and ucx.direct_access); local clients read through gRPC");
    return absl::OkStatus();
  }
  // Read-only when it cannot be reopened for writing: clients then put through gRPC.
  absl::StatusOr<MappedFile> file = ReopenMappedFile(shared_arena_->data(), O_RDWR);
  if (!file.ok()) file = ReopenMappedFile(shared_arena_->data(), O_RDONLY);
  if (!file.ok()) {
    log_->Info("local arena not served; local clients go through gRPC",
               {{"reason", file.status().message()}});
    return absl::OkStatus();
  }
  const ArenaServer::Arena arena{shared_arena_->data(), shared_arena_->size(), file->fd,
                                 file->offset, absl::Uniform<uint64_t>(absl::BitGen())};
  const std::string path = ArenaSocketPath(config_.server.local_socket);
  absl::StatusOr<std::unique_ptr<ArenaServer>> server =
      ArenaServer::Start(path, &env_, &local_metrics_, arena, ArenaServer::Options{});
  if (!server.ok()) {
    return absl::Status(server.status().code(),
                        absl::StrCat("server.local_socket: ", server.status().message()));
  }
  arena_server_ = *std::move(server);
  log_->Info("local arena served", {{"socket", path}, {"bytes", FormatByteSize(arena.size)}});
  return absl::OkStatus();
}

absl::Status Server::StartUcx() {
  if (ucx_context_ == nullptr) return absl::OkStatus();
  ucx::UcxServiceEnv env{&env_, KVSTASH_VERSION, &ucx_metrics_, shared_arena_,
                         ucx_context_->tcp_segment_bytes()};
  absl::StatusOr<std::unique_ptr<ucx::UcxServer>> ucx =
      ucx::UcxServer::Start(UcxOptionsOf(config_), ucx_context_, env);
  if (!ucx.ok()) {
    return absl::Status(ucx.status().code(), absl::StrCat("ucx: ", ucx.status().message()));
  }
  ucx_ = std::move(*ucx);
  return absl::OkStatus();
}

absl::Status Server::StartMetrics() {
  const int64_t start_unix_s = absl::ToUnixSeconds(env_.start_time);
  metrics_.Add([this, start_unix_s](std::vector<metrics::Family>* out) {
    using metrics::MetricType;
    out->push_back({"kvstash_build_info",
                    "Always 1; labels carry the version.",
                    MetricType::kGauge,
                    {{{{"version", KVSTASH_VERSION}}, 1, {}}}});
    out->push_back({"kvstash_ready",
                    "1 while /readyz answers 200.",
                    MetricType::kGauge,
                    {{{}, ready() ? 1.0 : 0.0, {}}}});
    out->push_back({"kvstash_start_time_seconds",
                    "Start time of the daemon, Unix seconds.",
                    MetricType::kGauge,
                    {{{}, static_cast<double>(start_unix_s), {}}}});
  });
  metrics_.Add([this](std::vector<metrics::Family>* out) { grpc_metrics_.Collect(out); });
  metrics_.Add([this](std::vector<metrics::Family>* out) {
    env_.auth_metrics.Collect(auth_.get(), &limiter_, out);
  });
  if (ucx_ != nullptr) {
    metrics_.Add([this](std::vector<metrics::Family>* out) { ucx_metrics_.Collect(out); });
  }
  if (arena_server_ != nullptr) {
    metrics_.Add([this](std::vector<metrics::Family>* out) {
      local_metrics_.Collect(out);
      out->push_back(
          {"kvstash_arena_held_bytes",
           "Payload bytes of chunks same-host clients hold in the arena while they "
           "copy them out, or have reserved there to write them.",
           metrics::MetricType::kGauge,
           {{{{"transport", "local"}}, static_cast<double>(arena_server_->held_bytes()), {}}}});
    });
  }
  metrics_.Add([this](std::vector<metrics::Family>* out) {
    CollectClusterMetrics(cluster_view_.load(), out);
  });
  const StoreMetricsOptions store_options{config_.metrics.namespace_labels,
                                          config_.metrics.max_namespaces};
  metrics_.Add([this, store_options](std::vector<metrics::Family>* out) {
    CollectStoreMetrics(*store_, registry_, store_options, out);
  });
  if (!config_.metrics.enabled) return absl::OkStatus();
  metrics::HttpHandlers handlers;
  handlers.metrics = [this] { return metrics_.Scrape(); };
  handlers.ready = [this] { return ready(); };
  handlers.listeners = [text = FormatReadyFile(BoundListenerInfo())] { return text; };
  metrics::HttpEndpointOptions options;
  options.listen = config_.metrics.listen;
  options.bearer_token_file = config_.metrics.bearer_token_file;
  absl::StatusOr<std::unique_ptr<metrics::HttpEndpoint>> http =
      metrics::HttpEndpoint::Start(options, std::move(handlers));
  if (!http.ok()) {
    if (!absl::IsUnavailable(http.status())) return http.status();  // names its setting
    return absl::Status(http.status().code(),
                        absl::StrCat("metrics.listen: ", http.status().message()));
  }
  http_ = std::move(*http);
  return absl::OkStatus();
}

bool Server::ready() const { return serving_.load() && !env_.draining.load(); }

std::string Server::metrics_address() const {
  return http_ == nullptr ? "" : http_->connect_address();
}

void Server::LogStartup() const {
  const DramConfig& d = config_.storage.dram;
  log_->Info("kvstashd serving",
             {{"version", KVSTASH_VERSION},
              {"grpc", connect_address()},
              {"metrics", metrics_address()},
              {"ucx", ucx_address()},
              {"listen", config_.server.grpc_listen},
              {"local_socket", config_.server.local_socket},
              {"local_send_buffer", local_listener_ == nullptr
                                        ? std::string()
                                        : FormatByteSize(local_listener_->send_buffer_bytes())},
              {"tls", TlsMode(config_.server.tls)},
              {"metrics_token", !config_.metrics.bearer_token_file.empty()},
              {"dram_capacity", FormatByteSize(d.capacity_bytes)},
              {"page", FormatByteSize(d.page_bytes)},
              {"max_chunk", FormatByteSize(config_.storage.max_chunk_bytes)},
              {"max_frame", FormatByteSize(config_.server.max_frame_bytes)},
              {"huge_pages", HugePagesName(d.huge_pages)},
              {"huge_page_use", HugePageUsage()},
              {"eviction", d.eviction}});
  LogNvmeStartup();
  LogExposure();
  LogAuthStartup();
}

void Server::LogExposure() const {
  const std::string& listen = config_.server.grpc_listen;
  if (!config_.server.tls.enabled() && !absl::StartsWith(listen, "unix:") &&
      !IsLoopbackHostPort(listen)) {
    log_->Warn(
        "gRPC serves plaintext on a non-loopback address; set server.tls.* "
        "(docs/security.md)",
        {{"listen", listen}});
  }
  if (!config_.server.local_socket.empty() && !config_.auth.required) {
    log_->Warn(
        "server.local_socket is served without auth.required: whoever reaches its directory "
        "reads and writes every tenant's chunks (docs/security.md)",
        {{"local_socket", config_.server.local_socket}});
  }
  const MetricsConfig& m = config_.metrics;
  if (m.enabled && m.bearer_token_file.empty() && !IsLoopbackHostPort(m.listen)) {
    log_->Warn(
        "/metrics is open on a non-loopback address; set metrics.bearer_token_file "
        "(docs/security.md)",
        {{"listen", m.listen}});
  }
}

void Server::LogAuthStartup() const {
  const AuthConfig& a = config_.auth;
  if (!auth_->enabled()) {
    log_->Warn(
        "authentication is off: any client that reaches a port can read and write every tenant",
        {{"fix", "set auth.token_file (docs/security.md)"}});
    return;
  }
  log_->Info("authentication on", {{"token_file", a.token_file},
                                   {"required", a.required},
                                   {"principals", auth_->stats().principals},
                                   {"reload_interval_ms", a.reload_interval_ms}});
}

void Server::LogNvmeStartup() const {
  const std::string path = config_.NvmePath();
  if (path.empty()) {
    log_->Info("nvme tier disabled; evicted chunks are dropped", {});
    return;
  }
  const NvmeConfig& n = config_.storage.nvme;
  const storage::StoreStats stats = store_->Stats();
  const int64_t open_ms = absl::ToInt64Milliseconds(store_open_time_);
  const double per_s = absl::ToDoubleSeconds(store_open_time_) > 0
                           ? stats.nvme.recovered_chunks / absl::ToDoubleSeconds(store_open_time_)
                           : 0.0;
  log_->Info("nvme tier open", {{"path", path},
                                {"capacity", FormatByteSize(n.capacity_bytes)},
                                {"recovered_chunks", stats.nvme.recovered_chunks},
                                {"rebuild_ms", open_ms},
                                {"rebuild_chunks_per_s", static_cast<int64_t>(per_s)},
                                {"write_through", n.write_through},
                                {"sync_writes", n.sync_writes},
                                {"promote_on_hit", n.promote_on_hit},
                                {"low_priority_background", n.low_priority_background},
                                {"crc32c", storage::RocksDbCrc32cImplementation()}});
}

void Server::CloseIdleConnections(absl::Time deadline, absl::Notification* stopped) {
  // Nothing is left to wait for after a quiet spell of this long with no streaming call,
  // no unary handler running and every connection's sent bytes acknowledged (a response
  // still queued would be lost to the reset of a closed socket; see DeliveryGate). The
  // spell also lets gRPC's Shutdown, called right after this thread starts, begin first.
  constexpr absl::Duration kQuiet = absl::Milliseconds(50);
  absl::Time idle_since = absl::InfiniteFuture();
  while (!stopped->WaitForNotificationWithTimeout(absl::Milliseconds(5))) {
    const absl::Time now = absl::Now();
    if (now >= deadline) return;  // gRPC's Shutdown cancels what is left itself
    if (grpc_metrics_.active_calls() > 0 || env_.unary_in_handler.load() > 0 ||
        !delivery_gate_.AllDelivered()) {
      idle_since = absl::InfiniteFuture();
      continue;
    }
    if (idle_since == absl::InfiniteFuture()) idle_since = now;
    if (now - idle_since >= kQuiet) {
      grpc_server_cancel_all_calls(grpc_server_->c_server());
      return;
    }
  }
}

void Server::Shutdown(absl::Duration grace) {
  if (shut_down_ || grpc_server_ == nullptr) return;
  shut_down_ = true;
  // Withdrawn before draining, so clients stop placing chunks here while calls finish.
  if (cluster_ != nullptr) cluster_->Stop();
  const absl::Time begin = absl::Now();
  if (local_listener_ != nullptr) local_listener_->Stop();
  if (arena_server_ != nullptr) arena_server_->StopAccepting();
  // A Unix socket delivers what was written even if the daemon closes it: nothing to hold.
  const bool unix_socket = absl::StartsWith(config_.server.grpc_listen, "unix:");
  // Held calls are released a little before gRPC's own deadline cancels what is left.
  const absl::Duration margin = std::min(grace / 10, absl::Milliseconds(100));
  delivery_gate_.Arm(unix_socket ? 0 : selected_port_, begin + grace - margin);
  env_.draining.store(true);
  log_->Info("kvstashd draining", {{"grace_ms", absl::ToInt64Milliseconds(grace)}});
  absl::Notification stopped;
  std::thread closer([&] { CloseIdleConnections(begin + grace, &stopped); });
  grpc_server_->Shutdown(absl::ToChronoTime(begin + grace));
  grpc_server_->Wait();
  stopped.Notify();
  closer.join();
  if (ucx_ != nullptr) {
    ucx_->Drain(begin + grace);
    ucx_.reset();  // force-closes the remaining connections
  }
  if (arena_server_ != nullptr) arena_server_->Stop();
  serving_.store(false);
  const storage::StoreStats stats = store_->Stats();
  log_->Info("kvstashd stopped", {{"drain_ms", absl::ToInt64Milliseconds(absl::Now() - begin)},
                                  {"chunks", stats.total.chunks},
                                  {"bytes", stats.total.bytes},
                                  {"huge_page_use", HugePageUsage()}});
}

ReadyInfo Server::BoundListenerInfo() const {
  ReadyInfo info;
  const std::string& grpc = config_.server.grpc_listen;
  absl::string_view host, port;
  if (absl::StartsWith(grpc, "unix:")) {
    info.grpc = grpc;
  } else {
    SplitHostPort(grpc, &host, &port);
    info.grpc = JoinHostPort(host.empty() ? "0.0.0.0" : host, selected_port_);
  }
  info.grpc_tls = config_.server.tls.enabled();
  info.local = config_.server.local_socket;
  if (ucx_ != nullptr && SplitHostPort(config_.ucx.listen, &host, &port)) {
    info.ucx = JoinHostPort(host.empty() ? "0.0.0.0" : host, PortOf(ucx_address()));
  }
  return info;
}

std::string Server::connect_address() const {
  const std::string& listen = config_.server.grpc_listen;
  if (absl::StartsWith(listen, "unix:")) return listen;
  absl::string_view host, port;
  SplitHostPort(listen, &host, &port);
  return JoinHostPort(LocalConnectHost(host), selected_port_);
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << contents;
    out.flush();
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace kvstash::server
