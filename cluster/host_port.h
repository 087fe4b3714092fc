// "host:port" addresses as cluster configuration names them (etcd endpoints, static
// members): a name, an IPv4 address or a bracketed IPv6 address, and a port 1..65535.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash::cluster {

struct HostPort {
  std::string host;  // without IPv6 brackets
  int port = 0;

  // "host:port", an IPv6 host bracketed again.
  std::string ToString() const;
};

// INVALID_ARGUMENT, quoting `text`, for anything but HOST:PORT.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);

}  // namespace kvstash::cluster
