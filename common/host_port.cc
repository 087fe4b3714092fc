#include "common/host_port.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kvstash {
namespace {

bool ValidHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

}  // namespace

std::string HostPort::ToString() const { return JoinHostPort(host, port); }

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", text, "\" is not HOST:PORT: ", why));
  };
  size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) return bad("no port");
  absl::string_view host = text.substr(0, colon);
  absl::string_view port_text = text.substr(colon + 1);
  HostPort out;
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("unbalanced brackets");
    host = host.substr(1, host.size() - 2);
    for (char c : host) {
      if (!absl::ascii_isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') {
        return bad("malformed IPv6 address");
      }
    }
  } else {
    if (host.empty()) return bad("empty host");
    for (char c : host) {
      if (!ValidHostChar(c)) return bad("bad character in host (IPv6 needs brackets)");
    }
  }
  int port = 0;
  if (port_text.empty() || port_text.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(port_text, &port) || port < 1 || port > 65535) {
    return bad("port must be 1..65535");
  }
  out.host = std::string(host);
  out.port = port;
  return out;
}

bool SplitHostPort(absl::string_view address, absl::string_view* host, absl::string_view* port) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return true;
}

bool IsWildcardHost(absl::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

std::string JoinHostPort(absl::string_view host, int port) {
  if (absl::StrContains(host, ':') && !absl::StartsWith(host, "[")) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

absl::string_view LocalConnectHost(absl::string_view host) {
  return IsWildcardHost(host) ? "127.0.0.1" : host;
}

}  // namespace kvstash
