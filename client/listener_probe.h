// DescribeListener: what answers at HOST:PORT when a connection there did not behave as the
// kvstashd listener a URI asked for, so that Connect's error says what to fix (a URI naming
// the daemon's metrics port or its other listener, or another program) instead of only
// "did not answer".
//
// Thread-safety: a function of its arguments.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/uri.h"

namespace kvstash::client_internal {

struct ListenerDescription {
  // Something answers there that is not the listener `expected` names: a setting must
  // change (FAILED_PRECONDITION), waiting cannot help.
  bool wrong_service = false;
  // A sentence naming the address and what answered; empty when nothing more can be said.
  std::string what;
};

// Connects to `host`:`port`, sends one HTTP/1.0 `GET /listeners` (answered by kvstashd's
// metrics endpoint with its listener addresses) and reads the reply until `deadline`.
// Reports a refused connection, kvstashd's metrics endpoint (naming the listener the URI
// should have used), another HTTP or HTTP/2 server, or a silent one.
ListenerDescription DescribeListener(const std::string& host, int port, UriScheme expected,
                                     absl::Time deadline);

// The reply part of DescribeListener: what `reply` (the bytes a listener at `address` sent
// back to an HTTP/1.0 GET, possibly none) says about it.
ListenerDescription DescribeReply(absl::string_view address, UriScheme expected,
                                  absl::string_view reply);

}  // namespace kvstash::client_internal
