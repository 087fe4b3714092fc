// Child processes for the benchmark: kvstashd, redis-server and memcached, each started
// on a free loopback port, logging into a per-run scratch directory, and always killed and
// reaped again (by the destructor on every return path, and by the kernel through
// PR_SET_PDEATHSIG if the benchmark itself dies).
//
// Thread-safety: ChildProcess and ScratchDir are not thread-safe; the main thread owns
// them. Spawn must run on the main thread: the death signal fires when the forking
// *thread* exits, so forking from a short-lived worker would kill the child early.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/ready_file.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace kvstash::bench {

// A directory under $TMPDIR (or /tmp) for logs, ready files and daemon data. Removed by
// the destructor unless Keep() was called (e.g. so the user can read logs after a failure).
using ScratchDir = ::kvstash::TempDir;

// A named child process (testing/subprocess.h) logging into a file.
class ChildProcess {
 public:
  // Starts argv[0] (searched in PATH when it has no '/') with stdout and stderr appended
  // to log_path. `name` labels messages.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const std::string& name,
                                                             const std::vector<std::string>& argv,
                                                             const std::string& log_path);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Stop(2000).
  ~ChildProcess();

  // The child's id; -1 once it was reaped.
  pid_t pid() const { return process_->pid(); }
  const std::string& name() const { return name_; }
  const std::string& log_path() const { return log_path_; }

  // True while the child has not exited (reaps it if it has).
  bool Alive() { return process_->Running(); }
  // SIGTERM, wait up to grace_ms, then SIGKILL; always reaps. Idempotent.
  void Stop(int64_t grace_ms) { process_->Stop(absl::Milliseconds(grace_ms)); }
  // SIGKILL and reap. Idempotent.
  void Kill() { process_->Kill(); }
  // "running", "exited with code N" or "killed by signal N (NAME)" (reaps an exited child).
  std::string ExitDescription();
  // The last `lines` lines of the child's log, for error messages.
  std::string LogTail(int lines) const;

 private:
  ChildProcess(std::string name, std::unique_ptr<Subprocess> process, std::string log_path)
      : name_(std::move(name)), process_(std::move(process)), log_path_(std::move(log_path)) {}

  std::string name_;
  std::unique_ptr<Subprocess> process_;
  std::string log_path_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).
absl::StatusOr<int> PickFreePort();

// Waits for kvstashd's ready file at `path` (common/ready_file.h). Fails early, with the
// log's tail, when `child` exits, or after timeout_ms.
absl::StatusOr<ReadyInfo> WaitForKvstashdReady(const std::string& path, ChildProcess& child,
                                               int64_t timeout_ms);

// Connects to 127.0.0.1:port until it accepts or timeout_ms passes (or `child` exits).
absl::Status WaitForPort(int port, ChildProcess& child, int64_t timeout_ms);

// A single-node etcd on free loopback ports, its data under `dir` (created), its log in
// dir + ".log". Empty binary: "etcd" from PATH. NOT_FOUND when the binary is missing.
struct EtcdServer {
  std::unique_ptr<ChildProcess> child;
  std::string endpoint;  // "127.0.0.1:PORT", its client endpoint
};
absl::StatusOr<EtcdServer> StartEtcd(const std::string& binary, const std::string& dir,
                                     int64_t timeout_ms);
// The keys under `prefix` in the etcd at `endpoint`, read with etcdctl (from PATH; its
// output in the order etcd returns them).
absl::StatusOr<std::vector<std::string>> EtcdKeys(const std::string& endpoint,
                                                  const std::string& prefix);

// The process's peak resident set size (VmHWM in /proc/PID/status), in bytes.
absl::StatusOr<uint64_t> ReadPeakRssBytes(pid_t pid);
// The current resident set size (VmRSS), in bytes.
absl::StatusOr<uint64_t> ReadRssBytes(pid_t pid);
// Waits until every process of `pids` uses at most `max_cores` cores over `window_ms` (a
// server finishing work left by the previous benchmark cell, e.g. hashing chunks it was sent,
// would take CPU from the next cell). Fails after timeout_ms, or when a process is gone.
absl::Status WaitForQuiet(const std::vector<pid_t>& pids, double max_cores, int64_t window_ms,
                          int64_t timeout_ms);
// WaitForQuiet at the benchmark's settling thresholds (at most 5% of a core over 200 ms,
// giving up after 30 s) before a measurement of `what`, so that it does not run against
// work an earlier one left (a daemon hashing or flushing the chunks it was sent); a server that
// does not settle is reported in `notes` and the measurement goes ahead.
void SettleServers(const std::vector<pid_t>& servers, absl::string_view what,
                   std::vector<std::string>* notes);

}  // namespace kvstash::bench
