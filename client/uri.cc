#include "client/uri.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

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

}  // namespace kvstash::client_internal
