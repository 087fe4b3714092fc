#include "bench/process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "testing/procfs.h"

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

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::string& name, const std::vector<std::string>& argv, const std::string& log_path) {
  SpawnOptions options;
  options.argv = argv;
  options.output_path = log_path;
  absl::StatusOr<std::unique_ptr<Subprocess>> process = Subprocess::Spawn(options);
  if (!process.ok()) return process.status();
  return std::unique_ptr<ChildProcess>(new ChildProcess(name, *std::move(process), log_path));
}

ChildProcess::~ChildProcess() { Stop(2000); }

std::string ChildProcess::ExitDescription() {
  return Alive() ? "running" : process_->exit_info().ToString();
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

absl::StatusOr<ReadyInfo> WaitForKvstashdReady(const std::string& path, ChildProcess& child,
                                               int64_t timeout_ms) {
  absl::StatusOr<ReadyInfo> ready =
      WaitForReadyFile(path, child.pid(), absl::Now() + absl::Milliseconds(timeout_ms));
  if (absl::IsUnavailable(ready.status()) || (!ready.ok() && !child.Alive())) {
    return absl::UnavailableError(absl::StrCat(child.name(), " exited before it was ready; log ",
                                               child.log_path(), ":\n", child.LogTail(20)));
  }
  if (absl::IsDeadlineExceeded(ready.status())) {
    return absl::DeadlineExceededError(
        absl::StrCat(child.name(), ": no ready file ", path, " after ", timeout_ms, " ms"));
  }
  return ready;
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

absl::StatusOr<EtcdServer> StartEtcd(const std::string& binary, const std::string& dir,
                                     int64_t timeout_ms) {
  const std::string path = FindExecutable(binary.empty() ? "etcd" : binary);
  if (path.empty()) return absl::NotFoundError("etcd not found (apt install etcd-server)");
  absl::StatusOr<int> client_port = PickFreePort();
  absl::StatusOr<int> peer_port = PickFreePort();
  if (!client_port.ok()) return client_port.status();
  if (!peer_port.ok()) return peer_port.status();
  const std::string client = absl::StrCat("http://127.0.0.1:", *client_port);
  const std::string peer = absl::StrCat("http://127.0.0.1:", *peer_port);
  auto child = ChildProcess::Spawn(
      "etcd",
      {path, "--name", "bench", "--data-dir", dir, "--listen-client-urls", client,
       "--advertise-client-urls", client, "--listen-peer-urls", peer,
       "--initial-advertise-peer-urls", peer, "--initial-cluster", "bench=" + peer},
      dir + ".log");
  if (!child.ok()) return child.status();
  if (absl::Status s = WaitForPort(*client_port, **child, timeout_ms); !s.ok()) return s;
  return EtcdServer{*std::move(child), absl::StrCat("127.0.0.1:", *client_port)};
}

absl::StatusOr<std::vector<std::string>> EtcdKeys(const std::string& endpoint,
                                                  const std::string& prefix) {
  SpawnOptions o;
  o.argv = {"etcdctl",
            "--endpoints=" + endpoint,
            "--dial-timeout=1s",
            "--command-timeout=1s",
            "get",
            "--prefix",
            "--keys-only",
            prefix};
  o.env = {"ETCDCTL_API=3"};
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Spawn(o);
  if (!p.ok()) return p.status();
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read((*p)->output_fd(), buf, sizeof(buf))) > 0) out.append(buf, n);
  absl::StatusOr<ExitInfo> exit = (*p)->Wait(absl::Now() + absl::Seconds(5));
  if (!exit.ok()) return exit.status();
  if (!exit->exited || exit->code != 0) {
    return absl::UnavailableError(absl::StrCat("etcdctl ", exit->ToString(), ": ", out));
  }
  std::vector<std::string> keys;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipWhitespace())) {
    keys.emplace_back(line);
  }
  return keys;
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
