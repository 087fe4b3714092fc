// Parsing of the daemon address handed to Client::Connect.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash::client_internal {

enum class UriScheme { kGrpc, kUcx };

struct ParsedUri {
  UriScheme scheme = UriScheme::kGrpc;
  std::string host;  // without IPv6 brackets
  int port = 0;
  bool tls = false;  // grpcs://: gRPC over TLS

  // "host:port" as gRPC expects it, IPv6 hosts bracketed again.
  std::string HostPort() const;
};

// Accepts "grpc://HOST:PORT", "grpcs://HOST:PORT" (gRPC over TLS; scheme kGrpc, tls set)
// and "ucx://HOST:PORT". HOST is a name, an IPv4 address or a
// bracketed IPv6 address; PORT is 1..65535. Anything else, including a path, user info or
// an unknown scheme, is INVALID_ARGUMENT with a message quoting the URI.
absl::StatusOr<ParsedUri> ParseUri(absl::string_view uri);

}  // namespace kvstash::client_internal
