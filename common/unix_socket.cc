#include "common/unix_socket.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace kvstash {
namespace {

// OK when nobody accepts on the socket at `path` (connection refused): a dead daemon's.
// UNAVAILABLE when a process accepts there (a full backlog included) or the connect
// failed otherwise (no permission, a security module): removing it could take a live
// socket away.
absl::Status CheckStale(const std::string& path) {
  const int fd = ConnectUnix(path);
  const int err = errno;
  if (fd >= 0) close(fd);
  if (fd < 0 && (err == ECONNREFUSED || err == ENOENT)) return absl::OkStatus();
  if (fd >= 0 || err == EAGAIN) {
    return absl::UnavailableError(
        absl::StrCat("another process serves ", path, " (a second kvstashd on the same socket?)"));
  }
  return absl::UnavailableError(
      absl::StrCat("cannot tell whether a process serves ", path, ": ", strerror(err)));
}

std::string Directory(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

int ConnectUnix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

std::string ConnectUnixError(int err) {
  switch (err) {
    case ENOENT:
      return "no socket there (is server.local_socket set to it, and its directory mounted "
             "here?)";
    case ECONNREFUSED:
      return "nothing listens there (connection refused; a stale socket?)";
    default:
      return absl::StrCat("cannot connect: ", strerror(err));
  }
}

std::string ArenaSocketPath(absl::string_view local_socket) {
  return absl::StrCat(local_socket, ".arena");
}

absl::Status SendWithFd(int sock, absl::string_view bytes, int fd) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  size_t sent = 0;
  while (sent < bytes.size()) {
    iovec iov{const_cast<char*>(bytes.data() + sent), bytes.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (sent == 0 && fd >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    const ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("send: ", strerror(errno)));
    sent += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

long RecvWithFd(int sock, void* data, size_t n, int* fd) {
  *fd = -1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{data, n};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t got;
  do {
    got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); got >= 0 && c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int))) {
      std::memcpy(fd, CMSG_DATA(c), sizeof(int));
    }
  }
  return got;
}

absl::Status RecvAll(int fd, void* data, size_t n, absl::Time deadline, int spin_us, int* passed) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    int timeout_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (left_ms <= 0) return absl::DeadlineExceededError("no answer in time");
      timeout_ms = static_cast<int>(std::min<int64_t>(left_ms, 1 << 30));
    }
    const int ready = WaitReadable(fd, spin_us, timeout_ms);
    if (ready < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat("poll: ", strerror(errno)));
    }
    if (ready <= 0) continue;  // interrupted or timed out: the deadline check decides
    int got_fd = -1;
    const long got = RecvWithFd(fd, p, n, &got_fd);
    if (got_fd >= 0 && passed != nullptr && *passed < 0) {
      *passed = got_fd;
    } else if (got_fd >= 0) {
      close(got_fd);
    }
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got == 0) return absl::UnavailableError("the peer closed the connection");
    if (got < 0) return absl::UnavailableError(absl::StrCat("recv: ", strerror(errno)));
    p += got;
    n -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

int WaitReadable(int fd, int spin_us, int timeout_ms) {
  pollfd pfd{fd, POLLIN, 0};
  const absl::Time spin_until = absl::Now() + absl::Microseconds(spin_us);
  do {
    const int ready = poll(&pfd, 1, 0);
    if (ready != 0) return ready;
    sched_yield();  // a thread with work on this core goes first
  } while (absl::Now() < spin_until);
  return poll(&pfd, 1, timeout_ms);
}

absl::Status CheckSocketPath(absl::string_view path) {
  if (path.empty() || path.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat("\"", path, "\" is not an absolute path"));
  }
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("a socket path must not hold a NUL byte");
  }
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", path, "\" is ", path.size(),
                                                   " bytes; a Unix socket path holds at most ",
                                                   sizeof(sockaddr_un::sun_path) - 1));
  }
  return absl::OkStatus();
}

absl::Status ClaimSocketPath(const std::string& path) {
  if (absl::Status s = CheckSocketPath(path); !s.ok()) return s;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return absl::UnavailableError(absl::StrCat("cannot inspect ", path, ": ", strerror(errno)));
    }
    const std::string dir = Directory(path);
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return absl::UnavailableError(
          absl::StrCat("directory ", dir, " of ", path, " does not exist"));
    }
    return absl::OkStatus();
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " exists and is not a socket"));
  }
  if (absl::Status s = CheckStale(path); !s.ok()) return s;
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::UnavailableError(
        absl::StrCat("cannot remove the stale socket ", path, ": ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<SocketFile> AdoptSocketPath(const std::string& path, mode_t mode) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return absl::UnavailableError(absl::StrCat("socket ", path, " is gone after binding"));
  }
  if (chmod(path.c_str(), mode) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot set the mode of ", path, ": ", strerror(errno)));
  }
  return SocketFile{st.st_dev, st.st_ino};
}

void RemoveSocketPath(const std::string& path, const SocketFile& ours) {
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == ours.dev &&
      st.st_ino == ours.ino) {
    unlink(path.c_str());
  }
}

}  // namespace kvstash
