#include "client/listener_probe.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/host_port.h"
#include "common/ready_file.h"
#include "common/unix_socket.h"

namespace kvstash::client_internal {
namespace {

constexpr absl::string_view kWrongListenerPayload = "type.kvstash/wrong_listener";
constexpr size_t kMaxReplyBytes = 16 << 10;
constexpr size_t kFrameHeaderBytes = 9;   // HTTP/2
constexpr size_t kRecordHeaderBytes = 5;  // TLS
// How long a listener may take to speak first (gRPC servers send SETTINGS on accepting).
constexpr absl::Duration kPrefaceWait = absl::Milliseconds(100);

// A socket connected to the first of the target's addresses that accepts, or -1 with
// `*why` set.
int ConnectAny(const ProbeTarget& target, absl::Time deadline, std::string* why) {
  if (!target.socket_path.empty()) {
    const int fd = ConnectUnix(target.socket_path);
    if (fd < 0) *why = ConnectUnixError(errno);
    return fd;
  }
  absl::StatusOr<std::vector<SocketAddress>> all = ResolveTcpAll(target.host, target.port);
  if (!all.ok()) {
    *why = std::string(all.status().message());
    return -1;
  }
  int err = 0;
  for (const SocketAddress& a : *all) {
    int fd = ConnectTcp(a, deadline, &err);
    if (fd >= 0) return fd;
  }
  *why = err == ECONNREFUSED ? "nothing listens there (connection refused)"
                             : absl::StrCat("cannot connect: ", std::strerror(err));
  return -1;
}

// What arrives on `fd` until the peer closes, `deadline` passes or `enough` bytes arrived.
ProbeReply Read(int fd, absl::Time deadline, size_t enough = kMaxReplyBytes) {
  ProbeReply reply;
  char buf[4096];
  while (reply.bytes.size() < enough) {
    pollfd p{fd, POLLIN, 0};
    const int ms = static_cast<int>(
        std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now()) + 1));
    if (poll(&p, 1, ms) != 1) break;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      reply.closed = true;
      break;
    }
    reply.bytes.append(buf, static_cast<size_t>(n));
  }
  return reply;
}

bool Send(int fd, absl::string_view bytes) {
  return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// A TLS 1.2/1.3 ClientHello any TLS server answers with a handshake record or an alert.
std::string ClientHello() {
  auto u16 = [](size_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v)}; };
  const std::string ciphers("\x13\x01\x13\x02\xc0\x2f\xc0\x2b\xc0\x30\xc0\x2c", 12);
  const std::string extensions =
      std::string("\x00\x2b\x00\x05\x04\x03\x04\x03\x03", 9) +               // supported_versions
      std::string("\x00\x0a\x00\x06\x00\x04\x00\x1d\x00\x17", 10) +          // supported_groups
      std::string("\x00\x0d\x00\x08\x00\x06\x04\x03\x08\x04\x04\x01", 12) +  // signature_algorithms
      // key_share: X25519's base point, a valid public key (without one a TLS 1.3 server
      // may close without a word).
      std::string("\x00\x33\x00\x26\x00\x24\x00\x1d\x00\x20\x09", 11) + std::string(31, '\0');
  std::string hello = std::string("\x03\x03", 2) + std::string(32, '\x5a') + std::string(1, '\0') +
                      u16(ciphers.size()) + ciphers + std::string("\x01\x00", 2) +
                      u16(extensions.size()) + extensions;
  std::string handshake = std::string(1, '\x01') + std::string(1, '\0') + u16(hello.size()) + hello;
  return std::string("\x16\x03\x01", 3) + u16(handshake.size()) + handshake;
}

const char* ListenerName(UriScheme s) { return s == UriScheme::kUcx ? "UCX" : "gRPC"; }

// `listener` (HOST:PORT as the daemon bound it) as the target's host reaches it: a wildcard
// host becomes the host the target named.
std::string Reachable(const ProbeTarget& target, const std::string& listener) {
  absl::string_view host, port;
  int p = 0;
  if (!SplitHostPort(listener, &host, &port) || !IsWildcardHost(host) ||
      !absl::SimpleAtoi(port, &p)) {
    return listener;
  }
  return JoinHostPort(target.host, p);
}

// The sentence for kvstashd's metrics endpoint, whose /listeners body is `info`.
std::string MetricsEndpoint(const ProbeTarget& target, const ReadyInfo& info) {
  std::string s = absl::StrCat(target.Address(), " is kvstashd's metrics endpoint, not its ",
                               ListenerName(target.scheme), " listener");
  const std::string grpc =
      absl::StrCat(info.grpc_tls ? "grpcs://" : "grpc://", Reachable(target, info.grpc));
  if (target.scheme == UriScheme::kGrpc) return absl::StrCat(s, " (", grpc, ")");
  if (info.ucx.empty()) {
    return absl::StrCat(s, " (that daemon serves no UCX: ucx.enabled is false; ", grpc, ")");
  }
  return absl::StrCat(s, " (ucx://", Reachable(target, info.ucx), ")");
}

// Up to 40 bytes of `reply`, non-printable ones as '.'.
std::string Printable(absl::string_view reply) {
  std::string out(reply.substr(0, 40));
  for (char& c : out) {
    if (!absl::ascii_isprint(static_cast<unsigned char>(c))) c = '.';
  }
  return out;
}

ListenerDescription Http1(const ProbeTarget& target, absl::string_view reply,
                          const std::string& want) {
  int status = 0;
  size_t sp = reply.find(' ');
  if (sp != absl::string_view::npos) (void)absl::SimpleAtoi(reply.substr(sp + 1, 3), &status);
  size_t body = reply.find("\r\n\r\n");
  if (status == 200 && body != absl::string_view::npos) {
    absl::StatusOr<ReadyInfo> info = ParseReadyFile(reply.substr(body + 4));
    if (info.ok()) return {true, MetricsEndpoint(target, *info)};
  }
  return {true, absl::StrCat(target.Address(), " is an HTTP server (HTTP status ", status,
                             "), not ", want)};
}

}  // namespace

std::string ProbeTarget::Address() const {
  return socket_path.empty() ? JoinHostPort(host, port) : socket_path;
}

absl::Status WrongListenerError(absl::string_view message) {
  absl::Status s = absl::FailedPreconditionError(message);
  s.SetPayload(kWrongListenerPayload, absl::Cord());
  return s;
}

bool IsWrongListener(const absl::Status& s) {
  return absl::IsFailedPrecondition(s) && s.GetPayload(kWrongListenerPayload).has_value();
}

ListenerDescription DescribeReply(const ProbeTarget& target, const ProbeReply& reply) {
  const std::string address = target.Address();
  const std::string want = absl::StrCat("kvstashd's ", ListenerName(target.scheme), " listener");
  const absl::string_view bytes = reply.bytes;
  if (absl::StartsWith(bytes, "HTTP/1.")) return Http1(target, bytes, want);
  const bool grpc = target.scheme == UriScheme::kGrpc;
  // A TLS record: an alert (21) or a handshake (22), version 3.0-3.4. Checked first: a
  // record's length may look like an HTTP/2 frame type.
  if (bytes.size() >= 3 && (bytes[0] == 21 || bytes[0] == 22) && bytes[1] == 3 && bytes[2] <= 4) {
    if (grpc && target.tls) return {};  // the handshake's own error says more
    return {true, absl::StrCat(address, " is a TLS server, not ", want,
                               "; if it is kvstashd's gRPC listener with server.tls, use grpcs://",
                               address)};
  }
  // HTTP/2 frames: 3 bytes of length, then the type (4 SETTINGS, 7 GOAWAY).
  if (bytes.size() >= 9 && (bytes[3] == 4 || bytes[3] == 7)) {
    // To a plaintext gRPC URI that is what was asked for: kvstashd slow to answer, or not
    // kvstashd (its Health call tells).
    if (grpc && !target.tls) return {};
    if (grpc) {
      return {true, absl::StrCat(address, " is a plaintext HTTP/2 (gRPC) server; if it is ",
                                 "kvstashd's gRPC listener, use grpc://", address,
                                 " without the TLS options")};
    }
    return {true, absl::StrCat(address, " is an HTTP/2 (gRPC) server, not ", want,
                               "; if it is kvstashd's gRPC listener, use grpc://", address)};
  }
  if (!bytes.empty()) {
    return {true, absl::StrCat(address, " answered \"", Printable(bytes), "\", not ", want)};
  }
  // Silence or a close without a word is no verdict: a loaded kvstashd may only be late.
  if (!grpc) return {};
  if (reply.closed) {
    return {false, absl::StrCat(address, " closes connections without answering HTTP, HTTP/2 ",
                                "(gRPC) or TLS")};
  }
  // gRPC servers send SETTINGS on accepting; kvstashd's UCX listener stays silent.
  return {false,
          absl::StrCat(address, " accepts connections but answered neither HTTP nor ",
                       "HTTP/2 (gRPC); if it is kvstashd's UCX listener, use ucx://", address)};
}

ListenerDescription DescribeListener(const ProbeTarget& target, absl::Time deadline) {
  std::string why;
  int fd = ConnectAny(target, deadline, &why);
  if (fd < 0) return {false, absl::StrCat(target.Address(), ": ", why)};
  ProbeReply reply = Read(fd, std::min(deadline, absl::Now() + kPrefaceWait), kFrameHeaderBytes);
  if (reply.bytes.empty() && !reply.closed &&
      Send(fd, absl::StrCat("GET /listeners HTTP/1.0\r\nHost: ", target.Address(), "\r\n\r\n"))) {
    reply = Read(fd, deadline);
  }
  close(fd);
  // TLS servers close on plaintext without a word: greet one as TLS instead.
  if (reply.bytes.empty() && reply.closed) {
    fd = ConnectAny(target, deadline, &why);
    if (fd < 0)
      return {false, absl::StrCat(target.Address(), " closed the connection, then: ", why)};
    if (Send(fd, ClientHello())) {
      ProbeReply tls = Read(fd, deadline, kRecordHeaderBytes);
      if (!tls.bytes.empty()) reply = tls;
    }
    close(fd);
  }
  return DescribeReply(target, reply);
}

}  // namespace kvstash::client_internal
