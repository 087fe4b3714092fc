// Subprocess: a child program started with fork/exec for tests and benchmarks (kvstashd,
// the CLI, peer servers), always killed and reaped again: by the destructor on every
// return path, and by the kernel (PR_SET_PDEATHSIG) when the parent dies.
//
//   SpawnOptions options;
//   options.argv = {"/path/to/kvstashd", "--listen", "127.0.0.1:0"};
//   options.output_path = dir + "/kvstashd.log";
//   auto child = Subprocess::Spawn(options);
//   ...
//   absl::StatusOr<ExitInfo> exit = (*child)->Wait(absl::Now() + absl::Seconds(10));
//
// Thread-safety: not thread-safe; owned by one thread. Spawn must run on a thread that
// outlives the child: the death signal fires when the forking *thread* exits.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kvstash {

// How a child ended (a decoded waitpid() status).
struct ExitInfo {
  bool exited = false;  // normal exit; `code` is valid
  int code = -1;
  bool signaled = false;  // killed by `signal`
  int signal = 0;

  // "exited with code N", "killed by signal N (NAME)" or "still running".
  std::string ToString() const;
};

// Decodes a waitpid() status.
ExitInfo DecodeWaitStatus(int wait_status);

struct SpawnOptions {
  // The program and its arguments. argv[0] with no '/' is searched in PATH.
  std::vector<std::string> argv;
  // "NAME=value" entries added to the parent's environment, replacing same-named ones.
  std::vector<std::string> env;
  // stdout and stderr are appended to this file (created when missing). Empty: both go to
  // one pipe whose read end is Subprocess::output_fd(). stdin is always /dev/null.
  std::string output_path;
};

class Subprocess {
 public:
  // Starts the child. NOT_FOUND when argv[0] is not an executable.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Spawn(const SpawnOptions& options);

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // Kill(), and closes the output pipe.
  ~Subprocess();

  // The child's id; -1 once it was reaped.
  pid_t pid() const { return pid_; }
  // Read end of the output pipe (non-owning view); -1 when output goes to a file or the
  // pipe was closed.
  int output_fd() const { return output_fd_; }
  void CloseOutput();

  // False once the child has exited (it is reaped then).
  bool Running();
  // Sends `sig`. FAILED_PRECONDITION when the child was already reaped.
  absl::Status Signal(int sig);
  // Waits until the child exits and reaps it. DEADLINE_EXCEEDED at `deadline`, the child
  // left running.
  absl::StatusOr<ExitInfo> Wait(absl::Time deadline);
  // SIGKILL and reap; how it ended. A no-op once reaped.
  ExitInfo Kill();
  // SIGTERM, up to `grace` for the child to exit, then Kill().
  ExitInfo Stop(absl::Duration grace);
  // How the child ended; "still running" until it was reaped.
  const ExitInfo& exit_info() const { return exit_; }

 private:
  Subprocess(pid_t pid, int output_fd) : pid_(pid), output_fd_(output_fd) {}
  // Reaps the child; with `block` false only when it has already exited.
  bool Reap(bool block);

  pid_t pid_;
  int output_fd_;
  ExitInfo exit_;
};

// Full path of `name` found in PATH, or "" when absent. A name with '/' is checked as is.
std::string FindExecutable(const std::string& name);

}  // namespace kvstash
