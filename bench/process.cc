#include "bench/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/procfs.h"

namespace kvstash::bench {
namespace {

using Clock = std::chrono::steady_clock;

absl::Status ErrnoStatus(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

void SleepMs(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

int64_t MsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Child side of Spawn: only async-signal-safe calls between fork and exec.
[[noreturn]] void ExecChild(pid_t parent, int log_fd, const std::string& path, char* const* argv) {
  // Kill the child when the benchmark dies for any reason, even SIGKILL.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, 0);
  dup2(log_fd, 1);
  dup2(log_fd, 2);
  execv(path.c_str(), argv);
  _exit(127);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ScratchDir>> ScratchDir::Create(const std::string& prefix) {
  const char* tmp = getenv("TMPDIR");
  std::string templ =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/", prefix, ".XXXXXX");
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return ErrnoStatus("mkdtemp " + templ);
  return std::unique_ptr<ScratchDir>(new ScratchDir(buf.data()));
}

ScratchDir::~ScratchDir() {
  if (keep_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::string& name, const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::string path = FindExecutable(argv[0]);
  if (path.empty()) return absl::NotFoundError(absl::StrCat(argv[0], ": not found"));
  // Everything the child needs is prepared before fork().
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return ErrnoStatus("open " + log_path);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return ErrnoStatus("fork");
  }
  if (pid == 0) ExecChild(parent, log_fd, path, cargv.data());
  close(log_fd);
  return std::unique_ptr<ChildProcess>(new ChildProcess(name, pid, log_path));
}

ChildProcess::~ChildProcess() { Stop(2000); }

bool ChildProcess::Alive() {
  if (reaped_) return false;
  pid_t r = waitpid(pid_, &wait_status_, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) reaped_ = true;
  return !reaped_;
}

void ChildProcess::Stop(int64_t grace_ms) {
  if (!Alive()) return;
  kill(pid_, SIGTERM);
  Clock::time_point start = Clock::now();
  while (MsSince(start) < grace_ms) {
    if (!Alive()) return;
    SleepMs(10);
  }
  kill(pid_, SIGKILL);
  while (waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

std::string ChildProcess::ExitDescription() {
  if (Alive()) return "running";
  if (WIFSIGNALED(wait_status_)) return absl::StrCat("killed by signal ", WTERMSIG(wait_status_));
  return absl::StrCat("exited with code ", WEXITSTATUS(wait_status_));
}

std::string ChildProcess::LogTail(int lines) const {
  std::ifstream in(log_path_);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  std::string out;
  for (const std::string& l : tail) absl::StrAppend(&out, "  | ", l, "\n");
  return out;
}

std::string FindExecutable(const std::string& name) {
  auto executable = [](const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (absl::StrContains(name, '/')) return executable(name) ? name : "";
  const char* env = getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(env != nullptr ? env : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    std::string candidate = absl::StrCat(dir, "/", name);
    if (executable(candidate)) return candidate;
  }
  return "";
}

absl::StatusOr<int> PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    absl::Status s = ErrnoStatus("bind 127.0.0.1:0");
    close(fd);
    return s;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

absl::StatusOr<std::string> WaitForReadyFile(const std::string& path, const std::string& key,
                                             ChildProcess& child, int64_t timeout_ms) {
  Clock::time_point start = Clock::now();
  const std::string prefix = key + "=";
  while (MsSince(start) < timeout_ms) {
    std::ifstream in(path);
    std::string line;
    while (in && std::getline(in, line)) {
      absl::string_view rest = absl::StripAsciiWhitespace(line);
      if (absl::ConsumePrefix(&rest, prefix) && !rest.empty()) return std::string(rest);
    }
    if (!child.Alive()) {
      return absl::UnavailableError(absl::StrCat(child.name(), " exited before it was ready; log ",
                                                 child.log_path(), ":\n", child.LogTail(20)));
    }
    SleepMs(20);
  }
  return absl::DeadlineExceededError(
      absl::StrCat(child.name(), ": no '", prefix, "' in ", path, " after ", timeout_ms, " ms"));
}

absl::Status WaitForPort(int port, ChildProcess& child, int64_t timeout_ms) {
  Clock::time_point start = Clock::now();
  while (MsSince(start) < timeout_ms) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return ErrnoStatus("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    close(fd);
    if (rc == 0) return absl::OkStatus();
    if (!child.Alive()) {
      return absl::UnavailableError(absl::StrCat(child.name(), " exited before listening; log ",
                                                 child.log_path(), ":\n", child.LogTail(20)));
    }
    SleepMs(20);
  }
  return absl::DeadlineExceededError(
      absl::StrCat(child.name(), " did not listen on port ", port, " within ", timeout_ms, " ms"));
}

absl::StatusOr<uint64_t> ReadPeakRssBytes(pid_t pid) { return ReadProcStatusBytes(pid, "VmHWM"); }
absl::StatusOr<uint64_t> ReadRssBytes(pid_t pid) { return ReadProcStatusBytes(pid, "VmRSS"); }

absl::Status WaitForQuiet(const std::vector<pid_t>& pids, double max_cores, int64_t window_ms,
                          int64_t timeout_ms) {
  const Clock::time_point start = Clock::now();
  const auto total = [&pids]() -> absl::StatusOr<absl::Duration> {
    absl::Duration sum;
    for (pid_t pid : pids) {
      absl::StatusOr<absl::Duration> t = ReadProcCpuTime(pid);
      if (!t.ok()) return t.status();
      sum += *t;
    }
    return sum;
  };
  while (true) {
    absl::StatusOr<absl::Duration> before = total();
    if (!before.ok()) return before.status();
    SleepMs(window_ms);
    absl::StatusOr<absl::Duration> after = total();
    if (!after.ok()) return after.status();
    if (*after - *before <= absl::Milliseconds(window_ms) * max_cores) return absl::OkStatus();
    if (MsSince(start) >= timeout_ms) {
      return absl::DeadlineExceededError(
          absl::StrCat("servers still busy after ", timeout_ms, " ms"));
    }
  }
}

void SettleServers(const std::vector<pid_t>& servers, absl::string_view what,
                   std::vector<std::string>* notes) {
  if (absl::Status s = WaitForQuiet(servers, 0.05, 200, 30000); !s.ok()) {
    notes->push_back(absl::StrCat("settling before ", what, ": ", s.ToString()));
  }
}

}  // namespace kvstash::bench
