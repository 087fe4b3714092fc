// HttpGet: a plain-socket HTTP/1.0 client, enough to read /metrics and the probes from
// tests, benchmarks and tools without another dependency (the daemon never links it).
//
// Thread-safety: a function of its arguments.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kvstash {

// A blocking HTTP/1.0 GET of http://`host_port``path` (for tools and tests). Returns the
// status code and body. UNAVAILABLE when the connection fails, DEADLINE_EXCEEDED after
// `timeout_ms`.
struct HttpResponse {
  int status = 0;
  std::string body;
};
absl::StatusOr<HttpResponse> HttpGet(const std::string& host_port, const std::string& path,
                                     int timeout_ms = 5000);
// As above, sending `headers` too: header lines, each ending in "\r\n" (e.g.
// "Authorization: Bearer T\r\n").
absl::StatusOr<HttpResponse> HttpGet(const std::string& host_port, const std::string& path,
                                     int timeout_ms, const std::string& headers);

}  // namespace kvstash
