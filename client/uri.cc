#include "client/uri.h"

#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cluster/member.h"
#include "common/host_port.h"
#include "common/unix_socket.h"

namespace kvstash::client_internal {
namespace {

absl::Status Bad(absl::string_view uri, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "bad daemon URI \"", uri, "\": ", why,
      " (expected grpc://HOST:PORT, grpcs://HOST:PORT, ucx://HOST:PORT or unix:///PATH)"));
}

absl::Status BadCluster(absl::string_view uri, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "bad cluster URI \"", uri, "\": ", why,
      " (expected etcd://HOST:PORT[,HOST:PORT...]/NAME, static://HOST:PORT[,HOST:PORT...] or "
      "dns://NAME:PORT)"));
}

// "h:p,h:p" -> normalized "h:p" entries; duplicates are an error (a typo, or a member
// listed twice that would own two shares).
absl::Status ParseAddressList(absl::string_view uri, absl::string_view list,
                              std::vector<std::string>* out) {
  if (list.empty()) return BadCluster(uri, "no HOST:PORT given");
  absl::flat_hash_set<std::string> seen;
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    if (entry.empty()) return BadCluster(uri, "empty entry in the HOST:PORT list");
    absl::StatusOr<HostPort> hp = ParseHostPort(entry);
    if (!hp.ok()) return BadCluster(uri, hp.status().message());
    // Host names are case-insensitive: Node:1 and node:1 are one member (and one id, so
    // every client places keys alike).
    std::string normalized = absl::AsciiStrToLower(hp->ToString());
    if (!seen.insert(normalized).second) {
      return BadCluster(uri, absl::StrCat("\"", normalized, "\" is listed twice"));
    }
    out->push_back(std::move(normalized));
  }
  return absl::OkStatus();
}

}  // namespace

std::string ParsedUri::HostPort() const { return JoinHostPort(host, port); }

std::string ParsedUri::GrpcTarget() const {
  return socket_path.empty() ? HostPort() : absl::StrCat("unix:", socket_path);
}

absl::StatusOr<ParsedUri> ParseUri(absl::string_view uri) {
  size_t sep = uri.find("://");
  if (sep == absl::string_view::npos) return Bad(uri, "missing scheme");
  absl::string_view scheme = uri.substr(0, sep);
  ParsedUri out;
  if (scheme == "grpc" || scheme == "grpcs") {
    out.scheme = UriScheme::kGrpc;
    out.tls = scheme == "grpcs";
  } else if (scheme == "ucx") {
    out.scheme = UriScheme::kUcx;
  } else if (scheme == "unix") {
    out.socket_path = std::string(uri.substr(sep + 3));
    if (out.socket_path.find_first_of("?#") != std::string::npos) {
      return Bad(uri, "no query or fragment allowed");
    }
    if (absl::Status s = CheckSocketPath(out.socket_path); !s.ok()) return Bad(uri, s.message());
    return out;
  } else {
    return Bad(uri, absl::StrCat("unknown scheme \"", scheme, "\""));
  }
  absl::string_view rest = uri.substr(sep + 3);
  if (rest.find_first_of("/?#@") != absl::string_view::npos) {
    return Bad(uri, "only HOST:PORT may follow the scheme");
  }
  absl::StatusOr<HostPort> hp = ParseHostPort(rest);
  if (!hp.ok()) return Bad(uri, hp.status().message());
  out.host = hp->host;
  out.port = hp->port;
  return out;
}

bool IsClusterUri(absl::string_view uri) {
  return absl::StartsWith(uri, "etcd://") || absl::StartsWith(uri, "etcds://") ||
         absl::StartsWith(uri, "static://") || absl::StartsWith(uri, "dns://");
}

absl::StatusOr<ClusterUri> ParseClusterUri(absl::string_view uri) {
  size_t sep = uri.find("://");
  if (sep == absl::string_view::npos) return BadCluster(uri, "missing scheme");
  absl::string_view scheme = uri.substr(0, sep);
  absl::string_view rest = uri.substr(sep + 3);
  if (rest.find_first_of("?#@") != absl::string_view::npos) {
    return BadCluster(uri, "no query, fragment or user info allowed");
  }
  ClusterUri out;
  if (scheme == "etcd" || scheme == "etcds") {
    out.scheme = ClusterScheme::kEtcd;
    out.tls = scheme == "etcds";
    size_t slash = rest.find('/');
    if (slash == absl::string_view::npos) return BadCluster(uri, "missing /NAME of the cluster");
    out.name = std::string(rest.substr(slash + 1));
    if (absl::Status s = cluster::ValidateClusterName(out.name); !s.ok()) {
      return BadCluster(uri, s.message());
    }
    if (absl::Status s = ParseAddressList(uri, rest.substr(0, slash), &out.addresses); !s.ok()) {
      return s;
    }
    return out;
  }
  if (rest.find('/') != absl::string_view::npos) {
    return BadCluster(uri, "only HOST:PORT may follow the scheme");
  }
  if (scheme == "static") {
    out.scheme = ClusterScheme::kStatic;
    if (absl::Status s = ParseAddressList(uri, rest, &out.addresses); !s.ok()) return s;
    return out;
  }
  if (scheme == "dns") {
    out.scheme = ClusterScheme::kDns;
    if (rest.find(',') != absl::string_view::npos) return BadCluster(uri, "one NAME:PORT only");
    absl::StatusOr<HostPort> hp = ParseHostPort(rest);
    if (!hp.ok()) return BadCluster(uri, hp.status().message());
    out.host = hp->host;
    out.port = hp->port;
    return out;
  }
  return BadCluster(uri, absl::StrCat("unknown scheme \"", scheme, "\""));
}

absl::StatusOr<std::vector<SocketAddress>> ResolveTcpAll(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), absl::StrCat(port).c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host, ":", port, ": ", gai_strerror(rc)));
  }
  std::vector<SocketAddress> out;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    SocketAddress one;
    std::memcpy(&one.addr, a->ai_addr, a->ai_addrlen);
    one.len = a->ai_addrlen;
    out.push_back(one);
  }
  freeaddrinfo(found);
  if (out.empty()) return absl::UnavailableError(absl::StrCat("no address for ", host, ":", port));
  return out;
}

absl::StatusOr<SocketAddress> ResolveTcp(const std::string& host, int port) {
  constexpr absl::Duration kAcceptWait = absl::Milliseconds(250);
  absl::StatusOr<std::vector<SocketAddress>> all = ResolveTcpAll(host, port);
  if (!all.ok()) return all.status();
  if (all->size() > 1) {
    for (const SocketAddress& a : *all) {
      int err = 0;
      int fd = ConnectTcp(a, absl::Now() + kAcceptWait, &err);
      if (fd >= 0) {
        close(fd);
        return a;
      }
    }
  }
  return all->front();
}

int ConnectTcp(const SocketAddress& to, absl::Time deadline, int* err) {
  int fd = socket(to.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  *err = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to.addr), to.len) != 0) {
    *err = errno;
    if (*err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int ms = static_cast<int>(
          std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now()) + 1));
      socklen_t len = sizeof(*err);
      *err = poll(&p, 1, ms) == 1 ? 0 : ETIMEDOUT;
      if (*err == 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, err, &len);
    }
  }
  if (*err != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace kvstash::client_internal
