// DaemonProcess: runs a real kvstashd as a child process for integration tests.
//
//   DaemonOptions options;
//   options.set = {"storage.dram.capacity_bytes=32MiB"};
//   auto daemon = kvstash::testing::DaemonProcess::Start(options);
//   ASSERT_TRUE(daemon.ok()) << daemon.status();
//   auto client = kvstash::Client::Connect((*daemon)->uri());
//
// Each daemon gets a fresh temporary directory holding its data_dir, its ready file and
// its stderr/stdout log. The daemon binds 127.0.0.1:0 by default and reports the bound
// port through --ready_file, so tests never race each other for ports. The destructor
// kills (SIGKILL) and reaps a daemon that is still running, fails the current test when
// the log holds a sanitizer report, prints the log's tail when the test failed, and
// removes the directory.
//
// Thread-safety: not thread-safe; owned by the test's main thread. Start() must be called
// from a thread that outlives the daemon (the child is killed when its forking thread
// exits, so an aborted test run never leaves daemons behind).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/ready_file.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace kvstash::testing {

struct DaemonOptions {
  // Path of the kvstashd binary. Default: the one built alongside the tests.
  std::string binary;
  // Value of --listen. Default: a free port picked by the kernel.
  std::string listen = "127.0.0.1:0";
  // Config overrides, each passed as `--set dotted.key=value`. data_dir is always set to
  // a fresh temporary directory and the NVMe tier is off (storage.nvme.enabled=false), so
  // tests of DRAM eviction see evicted chunks gone; metrics.listen is 127.0.0.1:0 (a free
  // port, reported as metrics= in the ready file), and so is ucx.listen (ucx=); a later
  // entry here wins. Entries in the environment variable KVSTASH_TEST_DAEMON_SET
  // (space-separated) come before these.
  std::vector<std::string> set;
  // Serves server.local_socket at DIR/kvstash.sock (before the `set` entries, which win).
  bool local_socket = false;
  // Further arguments appended verbatim after the generated ones.
  std::vector<std::string> extra_args;
  // Extra environment entries for the child ("NAME=value"); the test's environment is
  // inherited otherwise.
  std::vector<std::string> env;
  // How long Start waits for the ready file before killing the daemon and failing.
  int64_t ready_timeout_ms = 20000;
  // When the daemon exits before it is ready (e.g. the port of a just-killed daemon is
  // not yet free), Start tries again until this much time has passed. 0: one attempt.
  int64_t retry_start_ms = 0;
  // Lines of the daemon's log printed by the destructor when the current test failed.
  int log_tail_lines = 40;
};

class DaemonProcess {
 public:
  // Starts the daemon and waits until it reports its port. Errors: the daemon exited
  // early (its log tail is in the message) or was not ready within ready_timeout_ms.
  static absl::StatusOr<std::unique_ptr<DaemonProcess>> Start(const DaemonOptions& options);

  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;
  ~DaemonProcess();

  // -1 once the daemon was reaped.
  pid_t pid() const { return process_ == nullptr ? -1 : process_->pid(); }
  int port() const { return port_; }
  // "127.0.0.1:PORT" as reported by the ready file.
  const std::string& address() const { return ready_.grpc; }
  // "grpc://127.0.0.1:PORT".
  std::string uri() const { return "grpc://" + ready_.grpc; }
  // The UCX listener as reported by the ready file (`ucx=HOST:PORT`); empty / 0 when the
  // daemon runs without UCX.
  const std::string& ucx_address() const { return ready_.ucx; }
  int ucx_port() const { return ucx_port_; }
  // "ucx://127.0.0.1:PORT".
  std::string ucx_uri() const { return "ucx://" + ready_.ucx; }
  // "unix:///DIR/kvstash.sock" when the daemon serves server.local_socket (ready file's local=).
  std::string local_uri() const { return "unix://" + ready_.local; }
  // Everything the ready file reported (metrics= included).
  const ReadyInfo& ready() const { return ready_; }
  const std::string& dir() const { return dir_->path(); }
  const std::string& log_path() const { return log_path_; }
  // The --ready_file: `key=value` lines (grpc=, pid=, metrics=) while the daemon serves.
  const std::string& ready_path() const { return ready_path_; }

  // Sends `sig` to the daemon. FAILED_PRECONDITION when it was already reaped.
  absl::Status Signal(int sig);
  // Waits for the daemon to exit and reaps it. DEADLINE_EXCEEDED when still running
  // after `timeout` (the daemon is left running).
  absl::StatusOr<ExitInfo> WaitExit(absl::Duration timeout);
  // True until the daemon was reaped or is a zombie.
  bool Running();
  // SIGKILL + reap. No-op when already reaped.
  void Kill();

  // Resident and peak resident set size from /proc/PID/status (VmRSS, VmHWM).
  absl::StatusOr<uint64_t> RssBytes() const;
  absl::StatusOr<uint64_t> PeakRssBytes() const;
  // CPU time (user + system, all threads) the daemon has used so far, from /proc/PID/stat.
  absl::StatusOr<absl::Duration> CpuTime() const;

  // The last `lines` lines of the daemon's stderr/stdout log.
  std::string LogTail(int lines) const;
  // The whole log.
  std::string Log() const;

 private:
  DaemonProcess() = default;
  absl::Status Spawn(const DaemonOptions& options);
  absl::Status AwaitReady(absl::Duration timeout);
  absl::StatusOr<uint64_t> ProcStatusBytes(const char* field) const;

  DaemonOptions options_;
  std::unique_ptr<TempDir> dir_;
  std::string log_path_;
  std::string ready_path_;
  std::unique_ptr<Subprocess> process_;
  ReadyInfo ready_;
  int port_ = 0;
  int ucx_port_ = 0;
};

// Reads a whole file; empty string when it cannot be read.
std::string ReadFileOrEmpty(const std::string& path);

}  // namespace kvstash::testing
