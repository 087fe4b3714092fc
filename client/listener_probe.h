// DescribeListener: what answers at HOST:PORT when a connection there did not behave as the
// kvstashd listener a URI asked for, so that Connect's error says what to fix (a URI naming
// the daemon's metrics port or its other listener, plaintext against TLS, or another
// program) instead of only "did not answer".
//
// Thread-safety: functions of their arguments.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/uri.h"

namespace kvstash::client_internal {

// The listener a client asked for.
struct ProbeTarget {
  std::string host;  // as in the URI, without IPv6 brackets
  int port = 0;
  UriScheme scheme = UriScheme::kGrpc;
  bool tls = false;         // the client speaks TLS to it (grpcs:// or the tls_* options)
  std::string socket_path;  // unix://: the socket, instead of host and port

  std::string Address() const;  // HOST:PORT, IPv6 hosts in brackets; or the socket path
};

// What one probe connection got back.
struct ProbeReply {
  std::string bytes;    // what the peer sent, possibly nothing
  bool closed = false;  // the peer closed the connection (else the wait ran out)
};

struct ListenerDescription {
  // Something answers there that is not the listener the target names: a setting must
  // change (FAILED_PRECONDITION), waiting cannot help.
  bool wrong_service = false;
  // A sentence naming the address and what answered; empty when nothing more can be said.
  std::string what;
};

// Connects to the target (each address its host resolves to, until one accepts) and, by
// the deadline: reads what the peer sends unprompted (an HTTP/2 server's SETTINGS); else
// sends one HTTP/1.0 `GET /listeners` (answered by kvstashd's metrics endpoint with its
// listener addresses); and when the peer closes without a word, as TLS servers do on
// plaintext, sends a TLS ClientHello on a second connection.
ListenerDescription DescribeListener(const ProbeTarget& target, absl::Time deadline);

// What `reply` says about the listener at `target`.
ListenerDescription DescribeReply(const ProbeTarget& target, const ProbeReply& reply);

// FAILED_PRECONDITION with `message`, marked as a verdict about one address (something
// other than the kvstashd listener answers there), so that a cluster client can tell it
// from a setting every member would refuse.
absl::Status WrongListenerError(absl::string_view message);
bool IsWrongListener(const absl::Status& s);

}  // namespace kvstash::client_internal
