#include "server/server.h"

#include <grpc/grpc.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

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

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerConfig& config, Logger* log) {
  absl::StatusOr<std::unique_ptr<storage::ChunkStore>> store =
      storage::ChunkStore::Create(config.ToChunkStoreOptions());
  if (!store.ok()) return store.status();
  return std::unique_ptr<Server>(new Server(config, log, std::move(*store)));
}

Server::Server(const ServerConfig& config, Logger* log, std::unique_ptr<storage::ChunkStore> store)
    : config_(config), log_(log), store_(std::move(store)), service_(&env_, KVSTASH_VERSION) {
  env_.store = store_.get();
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
  grpc::ServerBuilder builder;
  builder.AddListeningPort(c.grpc_listen, grpc::InsecureServerCredentials(), &selected_port_);
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
  env_.start_time = absl::Now();
  LogStartup();
  return absl::OkStatus();
}

void Server::LogStartup() const {
  const DramConfig& d = config_.storage.dram;
  log_->Info("kvstashd serving", {{"version", KVSTASH_VERSION},
                                  {"grpc", connect_address()},
                                  {"listen", config_.server.grpc_listen},
                                  {"dram_capacity", FormatByteSize(d.capacity_bytes)},
                                  {"page", FormatByteSize(d.page_bytes)},
                                  {"max_chunk", FormatByteSize(config_.storage.max_chunk_bytes)},
                                  {"max_frame", FormatByteSize(config_.server.max_frame_bytes)},
                                  {"huge_pages", HugePagesName(d.huge_pages)},
                                  {"huge_page_use", HugePageUsage()},
                                  {"eviction", d.eviction}});
}

void Server::Shutdown(absl::Duration grace) {
  if (shut_down_ || grpc_server_ == nullptr) return;
  shut_down_ = true;
  const absl::Time begin = absl::Now();
  env_.draining.store(true);
  log_->Info("kvstashd draining", {{"grace_ms", absl::ToInt64Milliseconds(grace)}});
  grpc_server_->Shutdown(absl::ToChronoTime(begin + grace));
  grpc_server_->Wait();
  const storage::StoreStats stats = store_->Stats();
  log_->Info("kvstashd stopped", {{"drain_ms", absl::ToInt64Milliseconds(absl::Now() - begin)},
                                  {"chunks", stats.total.chunks},
                                  {"bytes", stats.total.bytes},
                                  {"huge_page_use", HugePageUsage()}});
}

std::string Server::connect_address() const {
  const std::string& listen = config_.server.grpc_listen;
  if (absl::StartsWith(listen, "unix:")) return listen;
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::" || host == "*") {
    host = "127.0.0.1";
  }
  return absl::StrCat(host, ":", selected_port_);
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
