#include "server/local_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvstash::server {
namespace {

// What SO_SNDBUF of `requested` bytes gives a Unix socket: the kernel caps the request at
// net.core.wmem_max and reports twice what it grants (its bookkeeping share).
int EffectiveSendBuffer(int requested) {
  const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int granted = 0;
  socklen_t len = sizeof(granted);
  if (probe >= 0) {
    (void)setsockopt(probe, SOL_SOCKET, SO_SNDBUF, &requested, sizeof(requested));
    (void)getsockopt(probe, SOL_SOCKET, SO_SNDBUF, &granted, &len);
    close(probe);
  }
  return granted / 2;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalListener>> LocalListener::Start(const std::string& path,
                                                                    Handler handler,
                                                                    const Options& options) {
  if (absl::Status s = ClaimSocketPath(path); !s.ok()) return s;
  std::unique_ptr<LocalListener> l(new LocalListener(path, std::move(handler), options));
  const auto failed = [&path](const char* call) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", path, ": ", call, ": ", strerror(errno)));
  };
  l->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (l->wake_fd_ < 0) return failed("eventfd");
  l->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (l->listen_fd_ < 0) return failed("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (bind(l->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return failed("bind");
  }
  absl::StatusOr<SocketFile> file = AdoptSocketPath(path, options.mode);
  if (!file.ok()) return file.status();
  l->file_ = *file;
  if (listen(l->listen_fd_, SOMAXCONN) != 0) return failed("listen");
  if (options.send_buffer_bytes > 0) {
    l->send_buffer_bytes_ = EffectiveSendBuffer(options.send_buffer_bytes);
  }
  l->thread_ = std::thread(&LocalListener::AcceptLoop, l.get());
  return l;
}

LocalListener::~LocalListener() {
  Stop();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

void LocalListener::Stop() {
  if (file_.ino != 0) RemoveSocketPath(path_, file_);
  file_ = SocketFile{};
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
    thread_.join();
  }
}

void LocalListener::AcceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno != EINTR) usleep(10000);  // ENOMEM: try again; only the eventfd ends it
      continue;
    }
    if (fds[1].revents != 0) return;
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        // Out of descriptors or memory: the connection waits in the backlog meanwhile.
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) usleep(10000);
        break;
      }
      const int bytes = options_.send_buffer_bytes;
      if (bytes > 0) (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
      handler_(fd);
    }
  }
}

}  // namespace kvstash::server
