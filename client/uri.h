// Parsing of the daemon or cluster address handed to Client::Connect, and resolving it.
//
// Thread-safety: functions of their arguments (and of the resolver and network).
#pragma once

#include <sys/socket.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kvstash::client_internal {

enum class UriScheme { kGrpc, kUcx };

struct ParsedUri {
  UriScheme scheme = UriScheme::kGrpc;
  std::string host;  // without IPv6 brackets
  int port = 0;
  bool tls = false;  // grpcs://: gRPC over TLS
  // unix://: the daemon's server.local_socket (scheme kGrpc, no host or port).
  std::string socket_path;

  // "host:port" as gRPC expects it, IPv6 hosts bracketed again.
  std::string HostPort() const;
  // What a gRPC channel connects to: "unix:PATH" for a socket, else HostPort().
  std::string GrpcTarget() const;
};

// Accepts "grpc://HOST:PORT", "grpcs://HOST:PORT" (gRPC over TLS; scheme kGrpc, tls set),
// "ucx://HOST:PORT" and "unix:///PATH" (gRPC over a Unix socket). HOST is a name, an IPv4
// address or a bracketed IPv6 address; PORT is 1..65535; PATH is absolute. Anything else,
// including a path after HOST:PORT, user info or an unknown scheme, is INVALID_ARGUMENT
// with a message quoting the URI.
absl::StatusOr<ParsedUri> ParseUri(absl::string_view uri);

// A TCP address `host` and `port` resolve to (numeric or by name).
struct SocketAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
};
// Every address, in the resolver's order. UNAVAILABLE naming HOST:PORT when the name does
// not resolve.
absl::StatusOr<std::vector<SocketAddress>> ResolveTcpAll(const std::string& host, int port);

// The address to connect to: when the name resolves to several (localhost may give ::1
// before 127.0.0.1 while a daemon listens on one of them), the first that accepts a TCP
// connection within 250 ms each; else, or when none accepts, the first.
absl::StatusOr<SocketAddress> ResolveTcp(const std::string& host, int port);

// A connected non-blocking, close-on-exec socket to `to`, or -1 with `*err` set to the
// errno (ETIMEDOUT when `deadline` passed first).
int ConnectTcp(const SocketAddress& to, absl::Time deadline, int* err);

enum class ClusterScheme { kEtcd, kStatic, kDns };

// A cluster URI: where the member set comes from.
struct ClusterUri {
  ClusterScheme scheme = ClusterScheme::kStatic;
  // etcd: its client endpoints; static: the members; each "host:port".
  std::vector<std::string> addresses;
  // etcd only: the cluster name (its etcd prefix is cluster::ClusterPrefix(name)).
  std::string name;
  // dns only: the name to resolve and the port every resolved address gets.
  std::string host;
  int port = 0;
  // etcds:// (etcd over TLS).
  bool tls = false;
};

// True when `uri` names a cluster (scheme etcd, etcds, static or dns), whether well formed
// or not.
bool IsClusterUri(absl::string_view uri);

// Accepts "etcd://HOST:PORT[,HOST:PORT...]/NAME" (NAME as cluster.name allows; etcds://
// for etcd over TLS),
// "static://HOST:PORT[,HOST:PORT...]" and "dns://NAME:PORT". INVALID_ARGUMENT quoting the
// URI and saying what is wrong otherwise (no endpoints, an empty entry, a bad port, a
// missing or invalid cluster name, a path where none belongs, duplicate static members).
absl::StatusOr<ClusterUri> ParseClusterUri(absl::string_view uri);

}  // namespace kvstash::client_internal
