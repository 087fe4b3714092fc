// Subprocess: a child program with its stdout and stderr captured through a pipe, for
// tests that run the CLI or a client that is killed mid-call.
//
// Thread-safety: not thread-safe; owned by one thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "testing/subprocess.h"
#include "tests/daemon_process.h"

namespace kvstash::testing {

class Subprocess {
 public:
  // Starts argv[0] (a path) with the given arguments; stdin is /dev/null, stdout and
  // stderr go to one pipe read by WaitForLine/ReadToEnd.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(const std::vector<std::string>& argv);

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // Kills (SIGKILL) and reaps a child that is still running.
  ~Subprocess() = default;

  pid_t pid() const { return process_->pid(); }
  // Reads output until a line equal to `line` arrived. DEADLINE_EXCEEDED after `timeout`,
  // UNAVAILABLE when the output ended first.
  absl::Status WaitForLine(const std::string& line, absl::Duration timeout);
  // Reads output until the child closes it, then reaps the child. A child still running
  // after `timeout` is killed and DEADLINE_EXCEEDED returned.
  absl::StatusOr<ExitInfo> ReadToEndAndWait(absl::Duration timeout);
  // Everything read so far.
  const std::string& output() const { return output_; }
  // SIGKILL + reap; returns how it ended.
  ExitInfo Kill();

 private:
  Subprocess() = default;
  // Appends available output, waiting at most `timeout`. False at end of output.
  bool ReadSome(absl::Duration timeout);

  std::unique_ptr<::kvstash::Subprocess> process_;
  std::string output_;
  size_t scanned_ = 0;  // bytes of output_ already searched for complete lines
};

struct CommandResult {
  ExitInfo exit;
  std::string output;  // stdout and stderr interleaved
};

// Runs `argv` to completion (killed after `timeout`).
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout = absl::Seconds(60));

}  // namespace kvstash::testing
