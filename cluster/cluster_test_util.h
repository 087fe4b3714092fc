// Helpers shared by the cluster tests: waiting for a condition, an endpoint nobody serves,
// a TCP relay that can cut a client off from etcd while others still reach it.
//
// Thread-safety: functions; DeadEndpoint is owned by one thread; TcpRelay is thread-safe.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace kvstash::cluster::testing {

// Generous: conditions normally hold within a lease TTL or two; this only bounds a hang.
constexpr absl::Duration kWaitDeadline = absl::Seconds(60);

// Polls `condition` until it holds (true) or `deadline` passes (false).
inline bool WaitFor(const std::function<bool()>& condition,
                    absl::Duration deadline = kWaitDeadline) {
  const absl::Time until = absl::Now() + deadline;
  while (!condition()) {
    if (absl::Now() >= until) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

// A loopback port held bound but never listened on, so connecting to it is refused at once
// and no other process can take it meanwhile.
class DeadEndpoint {
 public:
  DeadEndpoint() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      endpoint_ = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
    }
  }
  ~DeadEndpoint() {
    if (fd_ >= 0) close(fd_);
  }
  DeadEndpoint(const DeadEndpoint&) = delete;
  DeadEndpoint& operator=(const DeadEndpoint&) = delete;

  // "127.0.0.1:PORT"; empty when no port could be bound.
  const std::string& endpoint() const { return endpoint_; }

 private:
  int fd_ = -1;
  std::string endpoint_;
};

// Relays loopback connections to `target_port`; Cut() closes every connection and refuses
// new ones until Restore(), as a network partition would for the clients behind it; Hang()
// stops relaying and holds new connections unanswered, as a hung server would.
class TcpRelay {
 public:
  explicit TcpRelay(int target_port) : target_port_(target_port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(0);
    socklen_t len = sizeof(addr);
    if (listen_fd_ >= 0 && bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        listen(listen_fd_, 64) == 0 &&
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      endpoint_ = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
      thread_ = std::thread([this] { Run(); });
    }
  }
  ~TcpRelay() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (const Pair& p : pairs_) CloseBoth(p);
    for (int fd : held_) close(fd);
    if (listen_fd_ >= 0) close(listen_fd_);
  }
  TcpRelay(const TcpRelay&) = delete;
  TcpRelay& operator=(const TcpRelay&) = delete;

  // "127.0.0.1:PORT"; empty when no port could be bound.
  const std::string& endpoint() const { return endpoint_; }
  // Returns once every connection is closed.
  void Cut() {
    cut_ = true;
    const uint64_t seen = rounds_.load();
    while (rounds_.load() < seen + 2) absl::SleepFor(absl::Milliseconds(5));
  }
  void Hang() { hang_ = true; }
  void Restore() {
    cut_ = false;
    hang_ = false;
  }

 private:
  struct Pair {
    int client;
    int server;
  };
  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    return addr;
  }
  static void CloseBoth(const Pair& p) {
    close(p.client);
    close(p.server);
  }
  // Copies what `from` has to `to`; false when either side is done.
  static bool Pump(int from, int to) {
    char buf[65536];
    const ssize_t n = read(from, buf, sizeof(buf));
    if (n <= 0) return false;
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = write(to, buf + off, n - off);
      if (w <= 0) return false;
      off += w;
    }
    return true;
  }
  void Accept() {
    const int client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) return;
    if (hang_) {
      held_.push_back(client);
      return;
    }
    const int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(target_port_);
    if (cut_ || server < 0 ||
        connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(client);
      if (server >= 0) close(server);
      return;
    }
    pairs_.push_back({client, server});
  }
  // One thread polls the listener and every pair.
  void Run() {
    while (!stop_) {
      if (cut_) {
        for (const Pair& p : pairs_) CloseBoth(p);
        pairs_.clear();
      }
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}};
      if (hang_) {
        ++rounds_;
        if (poll(fds.data(), 1, 20) > 0) Accept();
        continue;
      }
      for (const Pair& p : pairs_) {
        fds.push_back({p.client, POLLIN, 0});
        fds.push_back({p.server, POLLIN, 0});
      }
      ++rounds_;
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      std::vector<Pair> alive;
      for (size_t i = 0; i < pairs_.size(); ++i) {
        const short a = fds[1 + 2 * i].revents;
        const short b = fds[2 + 2 * i].revents;
        bool ok = true;
        if (a != 0) ok = Pump(pairs_[i].client, pairs_[i].server);
        if (ok && b != 0) ok = Pump(pairs_[i].server, pairs_[i].client);
        if (ok) {
          alive.push_back(pairs_[i]);
        } else {
          CloseBoth(pairs_[i]);
        }
      }
      pairs_ = std::move(alive);
      if (fds[0].revents != 0) Accept();
    }
  }

  const int target_port_;
  int listen_fd_ = -1;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_{false};
  std::atomic<bool> hang_{false};
  std::atomic<uint64_t> rounds_{0};
  std::vector<Pair> pairs_;  // the relay's thread only (and the destructor after it)
  std::vector<int> held_;    // connections accepted while hung; likewise
  std::thread thread_;
};

}  // namespace kvstash::cluster::testing
