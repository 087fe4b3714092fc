#include "client/uri.h"

#include <netdb.h>

#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cluster/host_port.h"
#include "cluster/member.h"

namespace kvstash::client_internal {
namespace {

absl::Status Bad(absl::string_view uri, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad daemon URI \"", uri, "\": ", why,
                   " (expected grpc://HOST:PORT, grpcs://HOST:PORT or ucx://HOST:PORT)"));
}

bool IsHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

// Splits "host:port" or "[v6]:port"; the host comes back without brackets.
bool SplitHostPort(absl::string_view hp, absl::string_view* host, absl::string_view* port) {
  if (absl::StartsWith(hp, "[")) {
    size_t close = hp.find(']');
    if (close == absl::string_view::npos || close + 1 >= hp.size() || hp[close + 1] != ':') {
      return false;
    }
    *host = hp.substr(1, close - 1);
    *port = hp.substr(close + 2);
    return !host->empty() &&
           host->find_first_not_of("0123456789abcdefABCDEF:.") == absl::string_view::npos;
  }
  size_t colon = hp.rfind(':');
  if (colon == absl::string_view::npos) return false;
  *host = hp.substr(0, colon);
  *port = hp.substr(colon + 1);
  if (host->empty()) return false;
  for (char c : *host) {
    if (!IsHostChar(c)) return false;
  }
  return true;
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
    absl::StatusOr<cluster::HostPort> hp = cluster::ParseHostPort(entry);
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

std::string ParsedUri::HostPort() const {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
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
  } else {
    return Bad(uri, absl::StrCat("unknown scheme \"", scheme, "\""));
  }
  absl::string_view rest = uri.substr(sep + 3);
  if (rest.find_first_of("/?#@") != absl::string_view::npos) {
    return Bad(uri, "only HOST:PORT may follow the scheme");
  }
  absl::string_view host, port;
  if (!SplitHostPort(rest, &host, &port)) return Bad(uri, "expected HOST:PORT");
  int port_num = 0;
  if (port.empty() || port.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(port, &port_num) || port_num < 1 || port_num > 65535) {
    return Bad(uri, absl::StrCat("port \"", port, "\" is not in 1..65535"));
  }
  out.host = std::string(host);
  out.port = port_num;
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
    absl::StatusOr<cluster::HostPort> hp = cluster::ParseHostPort(rest);
    if (!hp.ok()) return BadCluster(uri, hp.status().message());
    out.host = hp->host;
    out.port = hp->port;
    return out;
  }
  return BadCluster(uri, absl::StrCat("unknown scheme \"", scheme, "\""));
}

absl::StatusOr<SocketAddress> ResolveTcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), absl::StrCat(port).c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host, ":", port, ": ", gai_strerror(rc)));
  }
  SocketAddress out;
  std::memcpy(&out.addr, found->ai_addr, found->ai_addrlen);
  out.len = found->ai_addrlen;
  freeaddrinfo(found);
  return out;
}

}  // namespace kvstash::client_internal
