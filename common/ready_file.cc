#include "common/ready_file.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvstash {
namespace {

// True once `pid` has exited. A child of ours is left unreaped (WNOWAIT).
bool Exited(pid_t pid) {
  siginfo_t info = {};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
    return info.si_pid == pid;
  }
  return errno == ECHILD && kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

std::string FormatReadyFile(const ReadyInfo& info) {
  std::string text = absl::StrCat("grpc=", info.grpc, "\n");
  if (info.pid != 0) absl::StrAppend(&text, "pid=", info.pid, "\n");
  if (!info.metrics.empty()) absl::StrAppend(&text, "metrics=", info.metrics, "\n");
  if (!info.ucx.empty()) absl::StrAppend(&text, "ucx=", info.ucx, "\n");
  if (info.grpc_tls) absl::StrAppend(&text, "grpc_tls=true\n");
  if (!info.local.empty()) absl::StrAppend(&text, "local=", info.local, "\n");
  return text;
}

absl::StatusOr<ReadyInfo> ParseReadyFile(absl::string_view text) {
  ReadyInfo info;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    if (line.find('=') == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("ready file: no '=' in line \"", line, "\""));
    }
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits('=', 1));
    const absl::string_view key = absl::StripAsciiWhitespace(kv.first);
    const absl::string_view value = absl::StripAsciiWhitespace(kv.second);
    if (key == "grpc") {
      info.grpc = std::string(value);
    } else if (key == "metrics") {
      info.metrics = std::string(value);
    } else if (key == "ucx") {
      info.ucx = std::string(value);
    } else if (key == "local") {
      info.local = std::string(value);
    } else if (key == "grpc_tls" && !absl::SimpleAtob(value, &info.grpc_tls)) {
      return absl::InvalidArgumentError(absl::StrCat("ready file: bad grpc_tls \"", value, "\""));
    } else if (key == "pid" && !absl::SimpleAtoi(value, &info.pid)) {
      return absl::InvalidArgumentError(absl::StrCat("ready file: bad pid \"", value, "\""));
    }
  }
  if (info.grpc.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("ready file has no grpc= line: \"", text, "\""));
  }
  return info;
}

absl::StatusOr<ReadyInfo> WaitForReadyFile(const std::string& path, pid_t pid,
                                           absl::Time deadline) {
  const absl::Time start = absl::Now();
  while (true) {
    if (access(path.c_str(), R_OK) == 0) {
      std::ifstream in(path, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      return ParseReadyFile(text.str());
    }
    if (Exited(pid)) {
      return absl::UnavailableError(absl::StrCat("process ", pid, " exited before writing ", path));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("no ready file ", path, " after ",
                                                      absl::FormatDuration(absl::Now() - start)));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

int PortOf(absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port <= 0 || port > 65535) {
    return 0;
  }
  return port;
}

}  // namespace kvstash
