// LocalListener: serves server.local_socket. It accepts connections on the Unix socket
// itself and hands each to the gRPC server (grpc::AddInsecureChannelFromFd) with a larger
// send buffer: a Unix socket holds at most its sender's SO_SNDBUF in flight (208 KiB by
// default), where loopback TCP grows its window to MiBs, and MiB-sized gets would
// otherwise stall on it.
//
//   auto listener = LocalListener::Start("/run/kvstash/kvstash.sock", server, {});
//   ...
//   (*listener)->Stop();  // the path is removed; accepted connections stay with gRPC
//
// Thread-safety: Start and Stop are called by one controlling thread; the accept loop runs
// on a thread of its own.
#pragma once

#include <grpcpp/server.h>

#include <cstdint>
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
    // (208 KiB unless the host raised it).
    int send_buffer_bytes = 4 << 20;
    // Permissions of the socket file (connecting takes write permission on it).
    uint32_t mode = 0666;
  };

  // Claims `path` (ClaimSocketPath), binds and listens there, and starts accepting for
  // `server`, which must be started and outlive the listener. ClaimSocketPath's errors;
  // UNAVAILABLE when the socket cannot be bound.
  static absl::StatusOr<std::unique_ptr<LocalListener>> Start(const std::string& path,
                                                              grpc::Server* server,
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
  LocalListener(std::string path, grpc::Server* server, const Options& options)
      : path_(std::move(path)), server_(server), options_(options) {}
  void AcceptLoop();

  const std::string path_;
  grpc::Server* const server_;
  const Options options_;
  SocketFile file_;  // zero once removed (or never bound)
  int send_buffer_bytes_ = 0;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd that ends the accept loop
  std::thread thread_;
};

}  // namespace kvstash::server
