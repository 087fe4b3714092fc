#include "testing/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace kvstash {
namespace {

absl::Status ErrnoStatus(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

// The parent's environment with `extra` entries replacing same-named ones.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const absl::string_view entry(*e);
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

// Child side of Spawn: only async-signal-safe calls between fork and exec.
[[noreturn]] void ExecChild(pid_t parent, int in_fd, int out_fd, char* const* argv,
                            char* const* envp) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(out_fd, 2);
  execve(argv[0], argv, envp);
  static const char kMsg[] = "exec failed\n";
  (void)!write(2, kMsg, sizeof(kMsg) - 1);
  _exit(127);
}

}  // namespace

std::string ExitInfo::ToString() const {
  if (exited) return absl::StrCat("exited with code ", code);
  if (signaled) return absl::StrCat("killed by signal ", signal, " (", strsignal(signal), ")");
  return "still running";
}

ExitInfo DecodeWaitStatus(int wait_status) {
  ExitInfo info;
  info.exited = WIFEXITED(wait_status);
  info.code = info.exited ? WEXITSTATUS(wait_status) : -1;
  info.signaled = WIFSIGNALED(wait_status);
  info.signal = info.signaled ? WTERMSIG(wait_status) : 0;
  return info;
}

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("empty argv");
  // Everything the child needs is prepared before fork().
  std::vector<std::string> args = options.argv;
  args[0] = FindExecutable(args[0]);
  if (args[0].empty()) return absl::NotFoundError(absl::StrCat(options.argv[0], ": not found"));
  std::vector<std::string> env = ChildEnvironment(options.env);
  std::vector<char*> argv = CStrings(args);
  std::vector<char*> envp = CStrings(env);
  int read_fd = -1, out_fd = -1;
  if (options.output_path.empty()) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe2");
    read_fd = fds[0];
    out_fd = fds[1];
  } else {
    out_fd = open(options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) return ErrnoStatus(absl::StrCat("open ", options.output_path));
  }
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  const pid_t pid = null_fd < 0 ? -1 : fork();
  if (pid == 0) ExecChild(parent, null_fd, out_fd, argv.data(), envp.data());
  const absl::Status failed = ErrnoStatus(null_fd < 0 ? "open /dev/null" : "fork");
  close(out_fd);
  if (null_fd >= 0) close(null_fd);
  if (pid < 0) {
    if (read_fd >= 0) close(read_fd);
    return failed;
  }
  return std::unique_ptr<Subprocess>(new Subprocess(pid, read_fd));
}

Subprocess::~Subprocess() {
  Kill();
  CloseOutput();
}

void Subprocess::CloseOutput() {
  if (output_fd_ >= 0) close(output_fd_);
  output_fd_ = -1;
}

bool Subprocess::Reap(bool block) {
  if (pid_ < 0) return true;
  int wait_status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &wait_status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r < 0 && errno == ECHILD) {
    exit_ = ExitInfo{true, 0};  // reaped by someone else; how it ended is unknown
  } else if (r == pid_) {
    exit_ = DecodeWaitStatus(wait_status);
  } else {
    return false;
  }
  pid_ = -1;
  return true;
}

bool Subprocess::Running() { return !Reap(false); }

absl::Status Subprocess::Signal(int sig) {
  if (pid_ < 0) return absl::FailedPreconditionError("process already reaped");
  if (kill(pid_, sig) != 0) return ErrnoStatus("kill");
  return absl::OkStatus();
}

absl::StatusOr<ExitInfo> Subprocess::Wait(absl::Time deadline) {
  const absl::Time start = absl::Now();
  while (!Reap(false)) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("still running after ", absl::FormatDuration(absl::Now() - start)));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return exit_;
}

ExitInfo Subprocess::Kill() {
  if (pid_ >= 0) {
    kill(pid_, SIGKILL);
    Reap(true);
  }
  return exit_;
}

ExitInfo Subprocess::Stop(absl::Duration grace) {
  if (Signal(SIGTERM).ok() && Wait(absl::Now() + grace).ok()) return exit_;
  return Kill();
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

}  // namespace kvstash
