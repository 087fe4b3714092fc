// Redis and memcached as systems under test.
#include <unistd.h>

#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/peers.h"
#include "bench/systems.h"

namespace kvstash::bench {
namespace {

constexpr int64_t kReadyTimeoutMs = 10000;
constexpr int kStartAttempts = 3;  // a picked port may be taken before the server binds it

// Picks a port, starts argv_for(port) and waits until it accepts connections. Retries on
// a new port when the server exits early (another process grabbed the port first).
absl::StatusOr<std::unique_ptr<ChildProcess>> StartOnFreePort(
    const std::string& name, const std::string& log_path,
    const std::function<std::vector<std::string>(int)>& argv_for, int* port_out) {
  absl::Status last;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    absl::StatusOr<int> port = PickFreePort();
    if (!port.ok()) return port.status();
    auto child = ChildProcess::Spawn(name, argv_for(*port), log_path);
    if (!child.ok()) return child.status();
    last = WaitForPort(*port, **child, kReadyTimeoutMs);
    if (last.ok()) {
      *port_out = *port;
      return child;
    }
  }
  return last;
}

class RedisSystem : public System {
 public:
  RedisSystem(std::string binary, PeerOptions options)
      : binary_(std::move(binary)), options_(std::move(options)) {}

  absl::Status Start() {
    auto argv = [this](int port) {
      return std::vector<std::string>{binary_,
                                      "--port",
                                      absl::StrCat(port),
                                      "--bind",
                                      "127.0.0.1",
                                      "--save",
                                      "",
                                      "--appendonly",
                                      "no",
                                      "--protected-mode",
                                      "no",
                                      "--maxmemory",
                                      absl::StrCat(options_.redis_maxmemory_bytes),
                                      "--maxmemory-policy",
                                      "allkeys-lru"};
    };
    auto child = StartOnFreePort("redis-server", options_.scratch_dir + "/redis.log", argv, &port_);
    if (!child.ok()) return child.status();
    child_ = *std::move(child);
    auto conn = RedisConn::Connect(port_);
    if (!conn.ok()) return conn.status();
    admin_ = *std::move(conn);
    return admin_->Ping();
  }

  const char* name() const override { return "redis"; }
  const char* transport() const override { return "tcp"; }
  absl::Status PrepareForSize(size_t) override { return admin_->FlushAll(); }
  absl::StatusOr<std::unique_ptr<Conn>> NewConn() override {
    auto conn = RedisConn::Connect(port_);
    if (!conn.ok()) return conn.status();
    return std::unique_ptr<Conn>(*std::move(conn));
  }
  bool NeedsFreshPutKeys() const override { return false; }
  pid_t server_pid() const override { return child_->pid(); }
  std::string ServerExit() override { return child_->Alive() ? "" : child_->ExitDescription(); }

 private:
  std::string binary_;
  PeerOptions options_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> child_;
  std::unique_ptr<RedisConn> admin_;
};

class MemcachedSystem : public System {
 public:
  MemcachedSystem(std::string binary, PeerOptions options)
      : binary_(std::move(binary)), options_(std::move(options)) {}

  // (Re)starts memcached: large items need -I 64m and slabs not yet given to other sizes.
  absl::Status Restart() {
    if (child_ != nullptr) child_->Stop(2000);
    child_.reset();
    auto argv = [this](int port) {
      std::vector<std::string> argv = {binary_,
                                       "-p",
                                       absl::StrCat(port),
                                       "-l",
                                       "127.0.0.1",
                                       "-U",
                                       "0",
                                       "-m",
                                       absl::StrCat(options_.memcached_memory_mib),
                                       "-I",
                                       absl::StrCat(options_.memcached_max_item_mib, "m"),
                                       "-t",
                                       absl::StrCat(options_.memcached_threads)};
      // memcached refuses to run as root without -u. Staying root keeps the death signal
      // of process.h armed: the kernel clears it when a process changes its user.
      if (geteuid() == 0) argv.insert(argv.end(), {"-u", "root"});
      return argv;
    };
    auto child =
        StartOnFreePort("memcached", options_.scratch_dir + "/memcached.log", argv, &port_);
    if (!child.ok()) return child.status();
    child_ = *std::move(child);
    auto conn = MemcachedConn::Connect(port_);
    if (!conn.ok()) return conn.status();
    std::string version;
    return (*conn)->Version(&version);
  }

  const char* name() const override { return "memcached"; }
  const char* transport() const override { return "tcp"; }
  absl::Status PrepareForSize(size_t) override { return Restart(); }
  absl::StatusOr<std::unique_ptr<Conn>> NewConn() override {
    auto conn = MemcachedConn::Connect(port_);
    if (!conn.ok()) return conn.status();
    return std::unique_ptr<Conn>(*std::move(conn));
  }
  bool NeedsFreshPutKeys() const override { return false; }
  pid_t server_pid() const override { return child_ != nullptr ? child_->pid() : -1; }
  std::string ServerExit() override {
    if (child_ == nullptr) return "not started";
    return child_->Alive() ? "" : child_->ExitDescription();
  }

 private:
  std::string binary_;
  PeerOptions options_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> child_;
};

std::string ResolveBinary(const std::string& binary, const char* default_name) {
  return FindExecutable(binary.empty() ? default_name : binary);
}

}  // namespace

absl::StatusOr<std::unique_ptr<System>> StartRedis(const std::string& binary,
                                                   const PeerOptions& options) {
  std::string path = ResolveBinary(binary, "redis-server");
  if (path.empty()) return absl::NotFoundError("redis-server not found (apt install redis-server)");
  auto system = std::make_unique<RedisSystem>(path, options);
  absl::Status s = system->Start();
  if (!s.ok()) return s;
  return std::unique_ptr<System>(std::move(system));
}

absl::StatusOr<std::unique_ptr<System>> StartMemcached(const std::string& binary,
                                                       const PeerOptions& options) {
  std::string path = ResolveBinary(binary, "memcached");
  if (path.empty()) return absl::NotFoundError("memcached not found (apt install memcached)");
  auto system = std::make_unique<MemcachedSystem>(path, options);
  absl::Status s = system->Restart();
  if (!s.ok()) return s;
  return std::unique_ptr<System>(std::move(system));
}

}  // namespace kvstash::bench
