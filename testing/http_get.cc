#include "testing/http_get.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kvstash {
namespace {

using Clock = std::chrono::steady_clock;

absl::StatusOr<int> Connect(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("expected HOST:PORT, got ", host_port));
  }
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), host_port.c_str() + colon + 1, &hints, &res) != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host_port));
  }
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", host_port, ": ", strerror(errno)));
  }
  return fd;
}

// Reads until the peer closes (HTTP/1.0 without keep-alive ends the body that way).
absl::Status ReadAll(int fd, Clock::time_point deadline, std::string* out) {
  char buf[16384];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0) {
      return absl::DeadlineExceededError("HTTP response timed out");
    }
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) return absl::OkStatus();
    if (n < 0 && errno != EINTR) return absl::UnavailableError(strerror(errno));
    if (n > 0) out->append(buf, n);
  }
}

}  // namespace

absl::StatusOr<HttpResponse> HttpGet(const std::string& host_port, const std::string& path,
                                     int timeout_ms) {
  return HttpGet(host_port, path, timeout_ms, "");
}

absl::StatusOr<HttpResponse> HttpGet(const std::string& host_port, const std::string& path,
                                     int timeout_ms, const std::string& headers) {
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  absl::StatusOr<int> fd = Connect(host_port);
  if (!fd.ok()) return fd.status();
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host_port, "\r\n", headers, "\r\n");
  std::string raw;
  absl::Status s = send(*fd, request.data(), request.size(), MSG_NOSIGNAL) ==
                           static_cast<ssize_t>(request.size())
                       ? ReadAll(*fd, deadline, &raw)
                       : absl::UnavailableError("cannot send the HTTP request");
  close(*fd);
  if (!s.ok()) return s;
  const size_t header_end = raw.find("\r\n\r\n");
  const std::string first_line = raw.substr(0, raw.find('\r'));
  std::vector<absl::string_view> status_line = absl::StrSplit(first_line, ' ');
  HttpResponse r;
  if (header_end == std::string::npos || status_line.size() < 2 ||
      !absl::SimpleAtoi(status_line[1], &r.status)) {
    return absl::DataLossError("malformed HTTP response");
  }
  r.body = raw.substr(header_end + 4);
  return r;
}

}  // namespace kvstash
