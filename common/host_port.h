// HOST:PORT addresses as the daemon's listen settings, its ready file, the client's URIs and
// the cluster configuration write them: a name, an IPv4 address or a bracketed IPv6 address,
// and a port; a wildcard host means "every interface".
//
// Thread-safety: functions of their arguments.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash {

struct HostPort {
  std::string host;  // without IPv6 brackets
  int port = 0;

  // "host:port", an IPv6 host bracketed again.
  std::string ToString() const;
};

// The strict form (URIs, cluster endpoints): INVALID_ARGUMENT, quoting `text`, for anything
// but HOST:PORT with a non-empty host and a port 1..65535.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);

// The lenient form (listen settings): splits "HOST:PORT" or "[V6]:PORT" at the last colon;
// the host comes back without brackets and may be empty (":7070"). False when there is no
// colon.
bool SplitHostPort(absl::string_view address, absl::string_view* host, absl::string_view* port);

// True for a host that means every interface: "", "0.0.0.0", "::", "[::]" or "*".
bool IsWildcardHost(absl::string_view host);

// "HOST:PORT", with the host in brackets when it is an IPv6 address.
std::string JoinHostPort(absl::string_view host, int port);

// The host a process on this machine connects to for a listener bound to `host`:
// 127.0.0.1 for a wildcard, else `host` itself.
absl::string_view LocalConnectHost(absl::string_view host);

}  // namespace kvstash
