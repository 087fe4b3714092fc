#include "tests/subprocess.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"

namespace kvstash::testing {

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const std::vector<std::string>& argv) {
  SpawnOptions options;
  options.argv = argv;
  absl::StatusOr<std::unique_ptr<::kvstash::Subprocess>> process =
      ::kvstash::Subprocess::Spawn(options);
  if (!process.ok()) return process.status();
  std::unique_ptr<Subprocess> child(new Subprocess());
  child->process_ = *std::move(process);
  return child;
}

bool Subprocess::ReadSome(absl::Duration timeout) {
  const int fd = process_->output_fd();
  if (fd < 0) return false;
  pollfd pfd = {fd, POLLIN, 0};
  const int ms = static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(timeout)));
  const int ready = poll(&pfd, 1, ms);
  if (ready <= 0) return true;  // timeout (or EINTR): nothing yet, not the end
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof(buf));
  if (n > 0) {
    output_.append(buf, n);
    return true;
  }
  if (n < 0 && errno == EINTR) return true;
  process_->CloseOutput();
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

absl::StatusOr<ExitInfo> Subprocess::ReadToEndAndWait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (!ReadSome(std::min(deadline - absl::Now(), absl::Milliseconds(100)))) {
      // Output closed; the child may still be exiting.
      absl::StatusOr<ExitInfo> exit = process_->Wait(deadline);
      if (exit.ok()) return exit;
      break;
    }
  }
  Kill();
  return absl::DeadlineExceededError(
      absl::StrCat("still running after ", absl::FormatDuration(timeout), "; output: ", output_));
}

ExitInfo Subprocess::Kill() { return process_->Kill(); }

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout) {
  auto child = Subprocess::Start(argv);
  if (!child.ok()) return child.status();
  auto exit = (*child)->ReadToEndAndWait(timeout);
  if (!exit.ok()) return exit.status();
  return CommandResult{*exit, (*child)->output()};
}

}  // namespace kvstash::testing
