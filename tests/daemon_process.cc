#include "tests/daemon_process.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "testing/procfs.h"

#ifndef KVSTASHD_PATH
#define KVSTASHD_PATH "kvstashd"
#endif

namespace kvstash::testing {

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<std::unique_ptr<DaemonProcess>> DaemonProcess::Start(const DaemonOptions& options) {
  std::unique_ptr<DaemonProcess> daemon(new DaemonProcess());
  daemon->options_ = options;
  if (daemon->options_.binary.empty()) daemon->options_.binary = KVSTASHD_PATH;
  absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-it");
  if (!dir.ok()) return dir.status();
  daemon->dir_ = *std::move(dir);
  daemon->log_path_ = daemon->dir_->Sub("daemon.log");
  daemon->ready_path_ = daemon->dir_->Sub("ready");
  mkdir(daemon->dir_->Sub("data").c_str(), 0755);

  const absl::Time give_up = absl::Now() + absl::Milliseconds(options.retry_start_ms);
  for (int attempt = 1;; ++attempt) {
    absl::Status spawned = daemon->Spawn(daemon->options_);
    if (!spawned.ok()) return spawned;
    absl::Status ready = daemon->AwaitReady(absl::Milliseconds(options.ready_timeout_ms));
    if (ready.ok()) return daemon;
    daemon->Kill();
    // Only an early exit is worth another try: a daemon that hangs will hang again.
    if (absl::IsDeadlineExceeded(ready) || absl::Now() >= give_up) {
      return absl::Status(ready.code(), absl::StrCat(ready.message(), " (attempt ", attempt,
                                                     ")\n--- daemon log tail ---\n",
                                                     daemon->LogTail(options.log_tail_lines)));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

absl::Status DaemonProcess::Spawn(const DaemonOptions& options) {
  SpawnOptions spawn;
  spawn.argv = {options.binary, "--listen", options.listen, "--ready_file", ready_path_, "--set",
                "data_dir=" + dir_->Sub("data"), "--set", "storage.nvme.enabled=false",
                // Tests run side by side: never the fixed default port.
                "--set", "metrics.listen=127.0.0.1:0", "--set", "ucx.listen=127.0.0.1:0"};
  // Settings a whole test run wants on every daemon (e.g. more UCX workers under
  // ThreadSanitizer, scripts/tsan.sh); the test's own entries come later and win.
  const char* run_settings = getenv("KVSTASH_TEST_DAEMON_SET");
  for (absl::string_view s :
       absl::StrSplit(run_settings != nullptr ? run_settings : "", ' ', absl::SkipEmpty())) {
    spawn.argv.push_back("--set");
    spawn.argv.push_back(std::string(s));
  }
  if (options.local_socket) {
    spawn.argv.push_back("--set");
    spawn.argv.push_back("server.local_socket=" + dir_->Sub("kvstash.sock"));
  }
  for (const std::string& s : options.set) {
    spawn.argv.push_back("--set");
    spawn.argv.push_back(s);
  }
  spawn.argv.insert(spawn.argv.end(), options.extra_args.begin(), options.extra_args.end());
  spawn.env = options.env;
  spawn.output_path = log_path_;
  unlink(ready_path_.c_str());
  {
    std::ofstream log(log_path_, std::ios::app);
    log << "### " << absl::StrJoin(spawn.argv, " ") << "\n";
  }
  absl::StatusOr<std::unique_ptr<Subprocess>> process = Subprocess::Spawn(spawn);
  if (!process.ok()) return process.status();
  process_ = *std::move(process);
  return absl::OkStatus();
}

absl::Status DaemonProcess::AwaitReady(absl::Duration timeout) {
  absl::StatusOr<ReadyInfo> ready =
      WaitForReadyFile(ready_path_, process_->pid(), absl::Now() + timeout);
  if (absl::IsUnavailable(ready.status())) {
    process_->Kill();
    return absl::UnavailableError(
        absl::StrCat("kvstashd exited before it was ready: ", process_->exit_info().ToString()));
  }
  if (absl::IsDeadlineExceeded(ready.status())) {
    return absl::DeadlineExceededError(
        absl::StrCat("kvstashd not ready after ", absl::FormatDuration(timeout)));
  }
  if (!ready.ok()) return ready.status();
  port_ = PortOf(ready->grpc);
  if (port_ == 0) return absl::InvalidArgumentError("bad grpc address: " + ready->grpc);
  ucx_port_ = PortOf(ready->ucx);
  ready_ = *std::move(ready);
  return absl::OkStatus();
}

DaemonProcess::~DaemonProcess() {
  Kill();
  // A sanitizer report in the daemon fails the test even when no call noticed it.
  const std::string log = Log();
  // ThreadSanitizer prints each report as it finds it, so even a daemon killed at the end
  // of a test leaves its races in the log.
  for (const char* marker :
       {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "ThreadSanitizer:"}) {
    EXPECT_EQ(log.find(marker), std::string::npos) << "kvstashd reported \"" << marker << "\"";
  }
  if (::testing::Test::HasFailure()) {
    fprintf(stderr, "--- kvstashd log tail (%s) ---\n%s--- end of kvstashd log ---\n",
            log_path_.c_str(), LogTail(options_.log_tail_lines).c_str());
    fprintf(stderr, "kept daemon directory %s\n", dir_->path().c_str());
    dir_->Keep();
  }
  if (getenv("KVSTASH_TEST_KEEP_DIRS") != nullptr) dir_->Keep();
}

absl::Status DaemonProcess::Signal(int sig) {
  if (pid() < 0) return absl::FailedPreconditionError("daemon already reaped");
  return process_->Signal(sig);
}

bool DaemonProcess::Running() { return process_ != nullptr && process_->Running(); }

absl::StatusOr<ExitInfo> DaemonProcess::WaitExit(absl::Duration timeout) {
  absl::StatusOr<ExitInfo> exit = process_->Wait(absl::Now() + timeout);
  if (absl::IsDeadlineExceeded(exit.status())) {
    return absl::DeadlineExceededError(
        absl::StrCat("kvstashd still running after ", absl::FormatDuration(timeout)));
  }
  return exit;
}

void DaemonProcess::Kill() {
  if (process_ != nullptr) process_->Kill();
}

absl::StatusOr<uint64_t> DaemonProcess::RssBytes() const { return ProcStatusBytes("VmRSS"); }
absl::StatusOr<uint64_t> DaemonProcess::PeakRssBytes() const { return ProcStatusBytes("VmHWM"); }

absl::StatusOr<uint64_t> DaemonProcess::ProcStatusBytes(const char* field) const {
  if (pid() < 0) return absl::FailedPreconditionError("daemon not running");
  return ReadProcStatusBytes(pid(), field);
}

absl::StatusOr<absl::Duration> DaemonProcess::CpuTime() const {
  if (pid() < 0) return absl::FailedPreconditionError("daemon not running");
  return ReadProcCpuTime(pid());
}

std::string DaemonProcess::Log() const { return ReadFileOrEmpty(log_path_); }

std::string DaemonProcess::LogTail(int lines) const {
  const std::string log = Log();
  const std::vector<absl::string_view> all = absl::StrSplit(log, '\n', absl::SkipEmpty());
  const size_t first = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0;
  std::string tail;
  for (size_t i = first; i < all.size(); ++i) absl::StrAppend(&tail, all[i], "\n");
  return tail;
}

}  // namespace kvstash::testing
