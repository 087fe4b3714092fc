#include "server/grpc/local_listener.h"

#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvstash::server {

absl::StatusOr<std::unique_ptr<LocalListener>> LocalListener::Start(const std::string& path,
                                                                    grpc::Server* server,
                                                                    const Options& options) {
  if (absl::Status s = ClaimSocketPath(path); !s.ok()) return s;
  std::unique_ptr<LocalListener> l(new LocalListener(path, server, options));
  l->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  l->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (l->listen_fd_ < 0 || l->wake_fd_ < 0 ||
      bind(l->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(l->listen_fd_, SOMAXCONN) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", path, ": ", strerror(errno)));
  }
  absl::StatusOr<SocketFile> file = AdoptSocketPath(path, options.mode);
  if (!file.ok()) return file.status();
  l->file_ = *file;
  l->thread_ = std::thread(&LocalListener::AcceptLoop, l.get());
  return l;
}

void LocalListener::Stop() {
  if (listen_fd_ < 0) return;
  RemoveSocketPath(path_, file_);
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
  close(listen_fd_);
  close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

void LocalListener::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        // Out of descriptors or memory: the connection waits in the backlog meanwhile.
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) usleep(10000);
        break;
      }
      const int bytes = options_.send_buffer_bytes;
      (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
      grpc::AddInsecureChannelFromFd(server_, fd);  // gRPC owns the fd from here
    }
  }
}

}  // namespace kvstash::server
