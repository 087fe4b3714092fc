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

// The host's CPU time so far, all CPUs, in clock ticks: in total, and stolen (time this
// virtual machine's CPUs wanted to run while the hypervisor ran something else).
struct HostCpuTimes {
  uint64_t total = 0;
  uint64_t steal = 0;
};
// From the aggregate "cpu" line of the text of /proc/stat.
absl::StatusOr<HostCpuTimes> ParseHostCpuTimes(absl::string_view proc_stat);
absl::StatusOr<HostCpuTimes> ReadHostCpuTimes();
// The share of the host's CPU time stolen between two readings; 0 when none passed.
double StolenFraction(const HostCpuTimes& before, const HostCpuTimes& after);

}  // namespace kvstash
