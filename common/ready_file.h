// The ready file: what kvstashd writes to --ready_file once it serves, so that whoever
// started it (tests, benchmarks, scripts) learns the ports it bound. One `key=value` line
// per listener:
//
//   grpc=HOST:PORT      always
//   pid=N               always in the ready file (the metrics endpoint's /listeners,
//                       the same format, leaves it out)
//   metrics=HOST:PORT   when the metrics endpoint is served
//   ucx=HOST:PORT       when the UCX listener is served
//   grpc_tls=true       when the gRPC listener takes TLS only (grpcs://)
//   local=PATH          when server.local_socket is served (unix://PATH)
//
// The ready file names hosts to connect to from this machine (a wildcard listen host as
// 127.0.0.1); /listeners names them as bound (a wildcard stays 0.0.0.0 or [::]: a reader
// on another host substitutes the host it reached).
//
// The daemon renames a complete file into place, so a reader that finds the file finds
// all of it. Readers ignore keys they do not know. python/kvstash/testing.py holds the
// Python reader of the same format.
//
// Thread-safety: functions of their arguments (and of the file system).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kvstash {

struct ReadyInfo {
  std::string grpc;       // HOST:PORT of the gRPC listener; never empty in a valid file
  int64_t pid = 0;        // the daemon's process id; 0 when the file has none
  std::string metrics;    // HOST:PORT of the metrics endpoint; empty when not served
  std::string ucx;        // HOST:PORT of the UCX listener; empty when not served
  bool grpc_tls = false;  // the gRPC listener takes TLS only
  std::string local;      // path of the server.local_socket listener; empty when not served
};

// The file's text: grpc=, then pid=, metrics=, ucx=, grpc_tls= and local= when set, one
// line each.
std::string FormatReadyFile(const ReadyInfo& info);

// Reads FormatReadyFile's text back. Blank lines, white space around keys and values and
// unknown keys are allowed. INVALID_ARGUMENT when the grpc= line is missing or a line or
// the pid is malformed.
absl::StatusOr<ReadyInfo> ParseReadyFile(absl::string_view text);

// Polls `path` until it exists and parses it. UNAVAILABLE when process `pid` exits first
// (a child of the caller is not reaped, so the caller still learns how it ended);
// DEADLINE_EXCEEDED at `deadline`; ParseReadyFile's error for a malformed file.
absl::StatusOr<ReadyInfo> WaitForReadyFile(const std::string& path, pid_t pid, absl::Time deadline);

// The port of "HOST:PORT" (IPv6 hosts in brackets), or 0 when there is none.
int PortOf(absl::string_view address);

}  // namespace kvstash
