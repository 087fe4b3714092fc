// LocalListener: a Unix socket the daemon accepts on itself, handing each connection to a
// handler: server.local_socket's connections go to the gRPC server
// (grpc::AddInsecureChannelFromFd) with a larger send buffer, since a Unix socket holds at
// most its sender's SO_SNDBUF in flight (208 KiB by default), where loopback TCP grows its
// window to MiBs, and MiB-sized gets would otherwise stall on it; the local arena
// socket's go to the ArenaServer.
//
//   auto listener = LocalListener::Start("/run/kvstash/kvstash.sock",
//       [server](int fd) { grpc::AddInsecureChannelFromFd(server, fd); }, {});
//   ...
//   (*listener)->Stop();  // the path is removed; accepted connections stay with the handler
//
// Thread-safety: Start and Stop are called by one controlling thread; the accept loop runs
// on a thread of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/unix_socket.h"

namespace kvstash::server {

class LocalListener {
 public:
  struct Options {
    // SO_SNDBUF of each accepted connection; the kernel caps it at net.core.wmem_max
    // (208 KiB unless the host raised it). 0: the kernel's default.
    int send_buffer_bytes = 4 << 20;
    // Permissions of the socket file (connecting takes write permission on it).
    uint32_t mode = 0666;
  };

  // Takes each accepted connection (a non-blocking, close-on-exec descriptor) and owns it.
  // Runs on the accept thread: it must not block.
  using Handler = std::function<void(int fd)>;

  // Claims `path` (ClaimSocketPath), binds and listens there, and starts accepting for
  // `handler`. ClaimSocketPath's errors; UNAVAILABLE when the socket cannot be bound.
  static absl::StatusOr<std::unique_ptr<LocalListener>> Start(const std::string& path,
                                                              Handler handler,
                                                              const Options& options);
  LocalListener(const LocalListener&) = delete;
  LocalListener& operator=(const LocalListener&) = delete;
  ~LocalListener();

  // Removes the socket file while still ours and stops accepting (the listening socket is
  // closed by the destructor). Idempotent.
  void Stop();

  // The send buffer each connection gets: Options::send_buffer_bytes, or less where
  // net.core.wmem_max caps it.
  int send_buffer_bytes() const { return send_buffer_bytes_; }

 private:
  LocalListener(std::string path, Handler handler, const Options& options)
      : path_(std::move(path)), handler_(std::move(handler)), options_(options) {}
  void AcceptLoop();

  const std::string path_;
  const Handler handler_;
  const Options options_;
  SocketFile file_;  // zero once removed (or never bound)
  int send_buffer_bytes_ = 0;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd that ends the accept loop
  std::thread thread_;
};

}  // namespace kvstash::server
