#include "client/listener_probe.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/ready_file.h"

namespace kvstash::client_internal {
namespace {

constexpr size_t kMaxReplyBytes = 16 << 10;

// Milliseconds left until `deadline` for poll(), at least 0.
int MsLeft(absl::Time deadline) {
  return static_cast<int>(
      std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now()) + 1));
}

// A connected socket, or -1 with `*why` set.
int ConnectBy(const std::string& host, int port, absl::Time deadline, std::string* why) {
  absl::StatusOr<SocketAddress> to = ResolveTcp(host, port);
  if (!to.ok()) {
    *why = std::string(to.status().message());
    return -1;
  }
  int fd = socket(to->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0 && connect(fd, reinterpret_cast<const sockaddr*>(&to->addr), to->len) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      socklen_t len = sizeof(err);
      err = poll(&p, 1, MsLeft(deadline)) == 1 ? 0 : ETIMEDOUT;
      if (err == 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
  }
  if (err != 0) {
    if (fd >= 0) close(fd);
    *why = err == ECONNREFUSED ? "nothing listens there (connection refused)"
                               : absl::StrCat("cannot connect: ", std::strerror(err));
    return -1;
  }
  return fd;
}

// Sends `request` and returns what comes back until the peer closes, `deadline` passes or
// kMaxReplyBytes arrived.
std::string Exchange(int fd, absl::string_view request, absl::Time deadline) {
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return "";
  }
  std::string reply;
  char buf[4096];
  while (reply.size() < kMaxReplyBytes) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, MsLeft(deadline)) != 1) break;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  return reply;
}

const char* ListenerName(UriScheme s) { return s == UriScheme::kUcx ? "UCX" : "gRPC"; }

// The sentence for kvstashd's metrics endpoint, whose /listeners body is `info`.
std::string MetricsEndpoint(absl::string_view address, UriScheme expected, const ReadyInfo& info) {
  std::string s = absl::StrCat(address, " is kvstashd's metrics endpoint, not its ",
                               ListenerName(expected), " listener");
  if (expected == UriScheme::kGrpc) return absl::StrCat(s, " (grpc://", info.grpc, ")");
  if (info.ucx.empty()) {
    return absl::StrCat(s, " (that daemon serves no UCX: ucx.enabled is false; grpc://", info.grpc,
                        ")");
  }
  return absl::StrCat(s, " (ucx://", info.ucx, ")");
}

// Up to 40 bytes of `reply`, non-printable ones as '.'.
std::string Printable(absl::string_view reply) {
  std::string out(reply.substr(0, 40));
  for (char& c : out) {
    if (!absl::ascii_isprint(static_cast<unsigned char>(c))) c = '.';
  }
  return out;
}

}  // namespace

ListenerDescription DescribeReply(absl::string_view address, UriScheme expected,
                                  absl::string_view reply) {
  const std::string want = absl::StrCat("kvstashd's ", ListenerName(expected), " listener");
  if (absl::StartsWith(reply, "HTTP/1.")) {
    int status = 0;
    size_t sp = reply.find(' ');
    if (sp != absl::string_view::npos) (void)absl::SimpleAtoi(reply.substr(sp + 1, 3), &status);
    size_t body = reply.find("\r\n\r\n");
    if (status == 200 && body != absl::string_view::npos) {
      absl::StatusOr<ReadyInfo> info = ParseReadyFile(reply.substr(body + 4));
      if (info.ok()) return {true, MetricsEndpoint(address, expected, *info)};
    }
    return {true,
            absl::StrCat(address, " is an HTTP server (HTTP status ", status, "), not ", want)};
  }
  // An HTTP/2 server answers a bad preface with frames: 3 bytes of length, then the type
  // (4 SETTINGS, 7 GOAWAY). To a gRPC URI that is no verdict: kvstashd may only be slow.
  if (reply.size() >= 9 && (reply[3] == 4 || reply[3] == 7)) {
    if (expected == UriScheme::kGrpc) return {};
    return {true, absl::StrCat(address, " is an HTTP/2 (gRPC) server, not ", want,
                               "; if it is kvstashd's gRPC listener, use grpc://", address)};
  }
  // A TLS record: an alert (21) or a handshake (22), version 3.x.
  if (reply.size() >= 2 && (reply[0] == 21 || reply[0] == 22) && reply[1] == 3) {
    if (expected == UriScheme::kGrpc) {
      return {false, absl::StrCat(address, " answers with TLS (a kvstashd with server.tls ",
                                  "takes grpcs:// or the client's TLS options)")};
    }
    return {true, absl::StrCat(address, " is a TLS server, not ", want,
                               "; if it is kvstashd's gRPC listener, use grpcs://", address)};
  }
  if (reply.empty()) {
    // gRPC servers send their SETTINGS on accepting, so silence is no gRPC server; but a
    // loaded one may only be late, so this stays a hint, not a verdict.
    if (expected == UriScheme::kGrpc) {
      return {false,
              absl::StrCat(address, " accepts connections but answered neither HTTP nor ",
                           "HTTP/2 (gRPC); if it is kvstashd's UCX listener, use ucx://", address)};
    }
    return {};
  }
  return {true, absl::StrCat(address, " answered \"", Printable(reply), "\", not ", want)};
}

ListenerDescription DescribeListener(const std::string& host, int port, UriScheme expected,
                                     absl::Time deadline) {
  const std::string address = absl::StrContains(host, ':') ? absl::StrCat("[", host, "]:", port)
                                                           : absl::StrCat(host, ":", port);
  std::string why;
  int fd = ConnectBy(host, port, deadline, &why);
  if (fd < 0) return {false, absl::StrCat(address, ": ", why)};
  std::string reply = Exchange(
      fd, absl::StrCat("GET /listeners HTTP/1.0\r\nHost: ", address, "\r\n\r\n"), deadline);
  close(fd);
  return DescribeReply(address, expected, reply);
}

}  // namespace kvstash::client_internal
