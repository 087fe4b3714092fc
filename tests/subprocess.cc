#include "tests/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvstash::testing {

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(null_fd, 0);
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    execv(cargs[0], cargs.data());
    static const char kMsg[] = "exec failed\n";
    (void)!write(2, kMsg, sizeof(kMsg) - 1);
    _exit(127);
  }
  close(pipe_fds[1]);
  close(null_fd);
  if (pid < 0) {
    close(pipe_fds[0]);
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  }
  std::unique_ptr<Subprocess> child(new Subprocess());
  child->pid_ = pid;
  child->fd_ = pipe_fds[0];
  return child;
}

Subprocess::~Subprocess() {
  Kill();
  if (fd_ >= 0) close(fd_);
}

bool Subprocess::ReadSome(absl::Duration timeout) {
  if (fd_ < 0) return false;
  pollfd pfd = {fd_, POLLIN, 0};
  const int ms = static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(timeout)));
  const int ready = poll(&pfd, 1, ms);
  if (ready <= 0) return true;  // timeout (or EINTR): nothing yet, not the end
  char buf[4096];
  const ssize_t n = read(fd_, buf, sizeof(buf));
  if (n > 0) {
    output_.append(buf, n);
    return true;
  }
  if (n < 0 && errno == EINTR) return true;
  close(fd_);
  fd_ = -1;
  return false;
}

absl::Status Subprocess::WaitForLine(const std::string& line, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    for (size_t eol; (eol = output_.find('\n', scanned_)) != std::string::npos;) {
      const bool match = output_.compare(scanned_, eol - scanned_, line) == 0;
      scanned_ = eol + 1;
      if (match) return absl::OkStatus();
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat("no line \"", line, "\"; output: ", output_));
    }
    if (!ReadSome(std::min(left, absl::Milliseconds(100)))) {
      return absl::UnavailableError(absl::StrCat("output ended before \"", line, "\": ", output_));
    }
  }
}

bool Subprocess::Reap(bool block) {
  if (pid_ < 0) return true;
  int wait_status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &wait_status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  exit_ = DecodeWaitStatus(wait_status);
  pid_ = -1;
  return true;
}

absl::StatusOr<ExitInfo> Subprocess::ReadToEndAndWait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (!ReadSome(std::min(deadline - absl::Now(), absl::Milliseconds(100)))) {
      // Output closed; the child may still be exiting.
      while (!Reap(false) && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
      if (pid_ < 0) return exit_;
      break;
    }
  }
  Kill();
  return absl::DeadlineExceededError(
      absl::StrCat("still running after ", absl::FormatDuration(timeout), "; output: ", output_));
}

ExitInfo Subprocess::Kill() {
  if (pid_ >= 0) {
    kill(pid_, SIGKILL);
    Reap(true);
  }
  return exit_;
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout) {
  auto child = Subprocess::Start(argv);
  if (!child.ok()) return child.status();
  auto exit = (*child)->ReadToEndAndWait(timeout);
  if (!exit.ok()) return exit.status();
  return CommandResult{*exit, (*child)->output()};
}

}  // namespace kvstash::testing
