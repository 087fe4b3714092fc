#include "tests/daemon_process.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "common/procfs.h"

extern char** environ;

namespace kvstash::testing {
namespace {

#ifndef KVSTASHD_PATH
#define KVSTASHD_PATH "kvstashd"
#endif

std::string MakeTempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl =
      absl::StrCat(base != nullptr && *base != '\0' ? base : "/tmp", "/kvstash-it-XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

// Environment for the child: ours, with `extra` entries replacing same-named ones.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    absl::string_view entry(*e);
    bool replaced = false;
    for (const std::string& x : extra) {
      const absl::string_view name = absl::string_view(x).substr(0, x.find('='));
      if (absl::StartsWith(entry, absl::StrCat(name, "="))) replaced = true;
    }
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The value of the `key=` line of the ready file, or "".
std::string ReadyFileValue(const std::string& text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, '=');
    if (absl::StripAsciiWhitespace(kv.first) == key) {
      return std::string(absl::StripAsciiWhitespace(kv.second));
    }
  }
  return "";
}

// Parses the ready file: `key=value` lines, of which `grpc=HOST:PORT` is required.
absl::StatusOr<std::string> ParseReadyFile(const std::string& text) {
  std::string grpc = ReadyFileValue(text, "grpc");
  if (!grpc.empty()) return grpc;
  return absl::NotFoundError(absl::StrCat("no grpc= line in ready file: \"", text, "\""));
}

// The port of "HOST:PORT", or 0.
int PortOf(const std::string& address) {
  int port = 0;
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port)) return 0;
  return port;
}

}  // namespace

std::string ExitInfo::ToString() const {
  if (exited) return absl::StrCat("exited with code ", code);
  if (signaled) return absl::StrCat("killed by signal ", signal, " (", strsignal(signal), ")");
  return "still running";
}

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
  daemon->dir_ = MakeTempDir();
  if (daemon->dir_.empty()) return absl::InternalError("mkdtemp failed");
  daemon->log_path_ = daemon->dir_ + "/daemon.log";
  daemon->ready_path_ = daemon->dir_ + "/ready";
  mkdir((daemon->dir_ + "/data").c_str(), 0755);

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
  std::vector<std::string> args = {options.binary,
                                   "--listen",
                                   options.listen,
                                   "--ready_file",
                                   ready_path_,
                                   "--set",
                                   "data_dir=" + dir_ + "/data",
                                   "--set",
                                   "storage.nvme.enabled=false",
                                   // Tests run side by side: never the fixed default port.
                                   "--set",
                                   "metrics.listen=127.0.0.1:0",
                                   "--set",
                                   "ucx.listen=127.0.0.1:0"};
  for (const std::string& s : options.set) {
    args.push_back("--set");
    args.push_back(s);
  }
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  std::vector<std::string> env = ChildEnvironment(options.env);
  std::vector<char*> argv = CStrings(args);
  std::vector<char*> envp = CStrings(env);

  unlink(ready_path_.c_str());
  {
    std::ofstream log(log_path_, std::ios::app);
    log << "### " << absl::StrJoin(args, " ") << "\n";
  }
  const int log_fd = open(log_path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) return absl::InternalError("cannot open daemon log");
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    execve(argv[0], argv.data(), envp.data());
    static const char kMsg[] = "exec of kvstashd failed\n";
    (void)!write(2, kMsg, sizeof(kMsg) - 1);
    _exit(127);
  }
  close(log_fd);
  close(null_fd);
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  pid_ = pid;
  exit_info_ = ExitInfo();
  return absl::OkStatus();
}

absl::Status DaemonProcess::AwaitReady(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    // The daemon renames a complete file into place, so existence means complete.
    if (access(ready_path_.c_str(), R_OK) == 0) {
      const std::string text = ReadFileOrEmpty(ready_path_);
      ucx_address_ = ReadyFileValue(text, "ucx");
      ucx_port_ = PortOf(ucx_address_);
      absl::StatusOr<std::string> address = ParseReadyFile(text);
      if (!address.ok()) return address.status();
      int port = 0;
      const size_t colon = address->rfind(':');
      if (colon == std::string::npos || !absl::SimpleAtoi(address->substr(colon + 1), &port) ||
          port <= 0) {
        return absl::InvalidArgumentError(absl::StrCat("bad grpc address: ", *address));
      }
      address_ = *address;
      port_ = port;
      return absl::OkStatus();
    }
    if (!Running()) {
      return absl::UnavailableError(
          absl::StrCat("kvstashd exited before it was ready: ", exit_info_.ToString()));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("kvstashd not ready after ", absl::FormatDuration(timeout)));
}

DaemonProcess::~DaemonProcess() {
  Kill();
  // A sanitizer report in the daemon fails the test even when no call noticed it.
  const std::string log = Log();
  for (const char* marker : {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"}) {
    EXPECT_EQ(log.find(marker), std::string::npos) << "kvstashd reported \"" << marker << "\"";
  }
  if (::testing::Test::HasFailure()) {
    fprintf(stderr, "--- kvstashd log tail (%s) ---\n%s--- end of kvstashd log ---\n",
            log_path_.c_str(), LogTail(options_.log_tail_lines).c_str());
    fprintf(stderr, "kept daemon directory %s\n", dir_.c_str());
    return;
  }
  if (getenv("KVSTASH_TEST_KEEP_DIRS") == nullptr && !dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

ExitInfo DecodeWaitStatus(int wait_status) {
  ExitInfo info;
  info.exited = WIFEXITED(wait_status);
  info.code = info.exited ? WEXITSTATUS(wait_status) : -1;
  info.signaled = WIFSIGNALED(wait_status);
  info.signal = info.signaled ? WTERMSIG(wait_status) : 0;
  return info;
}

void DaemonProcess::Reaped(int wait_status) {
  exit_info_ = DecodeWaitStatus(wait_status);
  pid_ = -1;
}

absl::Status DaemonProcess::Signal(int sig) {
  if (pid_ < 0) return absl::FailedPreconditionError("daemon already reaped");
  if (kill(pid_, sig) != 0) return absl::InternalError(absl::StrCat("kill: ", strerror(errno)));
  return absl::OkStatus();
}

bool DaemonProcess::Running() {
  if (pid_ < 0) return false;
  int wait_status = 0;
  const pid_t r = waitpid(pid_, &wait_status, WNOHANG);
  if (r == pid_) {
    Reaped(wait_status);
    return false;
  }
  return true;
}

absl::StatusOr<ExitInfo> DaemonProcess::WaitExit(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (Running()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("kvstashd still running after ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return exit_info_;
}

void DaemonProcess::Kill() {
  if (pid_ < 0) return;
  kill(pid_, SIGKILL);
  int wait_status = 0;
  while (waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
  }
  Reaped(wait_status);
}

absl::StatusOr<uint64_t> DaemonProcess::RssBytes() const { return ProcStatusBytes("VmRSS"); }
absl::StatusOr<uint64_t> DaemonProcess::PeakRssBytes() const { return ProcStatusBytes("VmHWM"); }

absl::StatusOr<uint64_t> DaemonProcess::ProcStatusBytes(const char* field) const {
  if (pid_ < 0) return absl::FailedPreconditionError("daemon not running");
  return ReadProcStatusBytes(pid_, field);
}

absl::StatusOr<absl::Duration> DaemonProcess::CpuTime() const {
  if (pid_ < 0) return absl::FailedPreconditionError("daemon not running");
  return ReadProcCpuTime(pid_);
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
