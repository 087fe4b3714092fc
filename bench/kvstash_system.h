// kvstashd as a system under test: the daemon started from a binary path on a free port
// (it reports the port through --ready_file), one kvstash::Client per client thread.
//
// Thread-safety: as System. Stats() may be called while no cell is running.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/systems.h"
#include "kvstash/client.h"

namespace kvstash::bench {

struct KvstashOptions {
  std::string binary;       // kvstashd path
  std::string scratch_dir;  // ready file, log and data_dir go here
  // storage.dram.capacity_bytes of the daemon.
  uint64_t dram_budget_bytes = 4ull << 30;
  // Further `--set dotted.key=value` overrides (e.g. tuning experiments).
  std::vector<std::string> extra_sets;
  // ClientOptions::frame_bytes; 0 keeps the client default.
  uint32_t frame_bytes = 0;
  // Non-empty: the clients connect over ucx:// with these UCX transports ("tcp",
  // "sm,self"), the daemon runs with the same ucx.tls, and rows carry `transport_label`.
  std::string ucx_tls;
  std::string transport_label = "grpc";
  // Non-empty: the daemon serves gRPC over TLS (set server.tls.* in extra_sets) and the
  // clients trust this CA file (ClientOptions::tls_ca_file).
  std::string tls_ca_file;
  // Non-empty: the bearer token the clients present (ClientOptions::token).
  std::string token;
  // The daemon also serves server.local_socket (in scratch_dir) and the clients connect
  // there over unix:// (unless ucx_tls is set).
  bool local_socket = false;
  int64_t ready_timeout_ms = 30000;
};

struct KvstashTierStats {
  uint64_t dram_capacity_bytes = 0;
  uint64_t dram_used_bytes = 0;
  uint64_t chunks = 0;
  uint64_t evictions = 0;
  uint64_t nvme_chunks = 0;
  uint64_t demotions = 0;
  uint64_t demotion_drops = 0;
  uint64_t demotions_pending = 0;
  uint64_t nvme_hits = 0;
  uint64_t recovered_chunks = 0;
};

class KvstashSystem : public System {
 public:
  static absl::StatusOr<std::unique_ptr<KvstashSystem>> Start(const KvstashOptions& options);

  const char* name() const override { return "kvstash"; }
  const char* transport() const override { return options_.transport_label.c_str(); }
  absl::Status PrepareForSize(size_t) override { return absl::OkStatus(); }
  absl::StatusOr<std::unique_ptr<Conn>> NewConn() override;
  // A client over gRPC even when the clients of NewConn use UCX (the daemon serves both).
  absl::StatusOr<std::unique_ptr<Conn>> NewGrpcConn();
  // A client of the full API over the clients' transport (grpc:// or ucx://), with the
  // options NewConn's clients have.
  absl::StatusOr<std::unique_ptr<Client>> NewClient();
  // The daemon acknowledges a repeated key as already present without storing it.
  bool NeedsFreshPutKeys() const override { return true; }
  pid_t server_pid() const override { return child_->pid(); }
  std::string ServerExit() override;

  absl::StatusOr<KvstashTierStats> Stats();
  // Stops the daemon (SIGTERM, clean) and starts it again on the same data directory;
  // returns the time from spawn until it reported ready (with NVMe: the index rebuild).
  absl::StatusOr<absl::Duration> Restart();
  // The last `lines` lines of the daemon's log.
  std::string LogTail(int lines) const { return child_->LogTail(lines); }
  // "127.0.0.1:PORT", as the daemon reported it.
  const std::string& address() const { return address_; }
  // "127.0.0.1:PORT" of the daemon's /metrics endpoint; "" when metrics are disabled.
  const std::string& metrics_address() const { return metrics_address_; }
  // SIGKILL, as a crash: no withdrawal, no flush. Restart() brings it back.
  void Kill();

 private:
  explicit KvstashSystem(KvstashOptions options) : options_(std::move(options)) {}
  absl::Status Launch();
  // The URI the clients use: grpc://, unix:// with local_socket or, with ucx_tls, ucx://.
  std::string ClientUri() const;
  absl::StatusOr<std::unique_ptr<Conn>> NewConnTo(const std::string& uri);

  KvstashOptions options_;
  std::unique_ptr<ChildProcess> child_;
  std::string address_;
  std::string metrics_address_;
  std::string ucx_address_;        // "" when the daemon reported no UCX listener
  std::string local_socket_;       // server.local_socket when KvstashOptions::local_socket
  std::unique_ptr<Client> admin_;  // for Stats; not used by cells
};

// The namespace every benchmark client opens.
Namespace BenchNamespace();
// The ClientOptions of the benchmark's clients for a daemon started with `options`.
ClientOptions BenchClientOptions(const KvstashOptions& options);
// A Conn over `client` (which may be shared with other Conns: Client is thread-safe).
std::unique_ptr<Conn> NewClientConn(std::shared_ptr<Client> client, NamespaceHandle ns);

// Ordered chunk keys of a prompt of `chunks` chunks, derived with the bench namespace's
// KeyChain from synthetic token ids, as an engine would derive them.
std::vector<BenchKey> PromptKeys(int chunks);

}  // namespace kvstash::bench
