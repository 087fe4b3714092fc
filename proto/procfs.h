// procfs: what /proc tells about another process (a daemon a test or benchmark started).
//
// Thread-safety: functions of their arguments (and of /proc at the time of the call).
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kvstash {

// A "NAME: N kB" line of /proc/PID/status (VmRSS, VmHWM, ...), in bytes. NOT_FOUND when the
// process is gone, INTERNAL when the field is missing or malformed.
absl::StatusOr<uint64_t> ReadProcStatusBytes(pid_t pid, absl::string_view field);

// CPU time (user + system, all threads) the process has used so far, from /proc/PID/stat.
absl::StatusOr<absl::Duration> ReadProcCpuTime(pid_t pid);

}  // namespace kvstash
