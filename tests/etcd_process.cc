#include "tests/etcd_process.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cluster/etcd_client.h"
#include "tests/daemon_process.h"

namespace kvstash::testing {
namespace {

// Starts with fresh ports this many times when another process took one between picking
// and binding it.
constexpr int kPortAttempts = 5;

// A port the kernel reports free on 127.0.0.1 (bound to port 0, then released).
absl::StatusOr<int> PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  if (port <= 0) return absl::InternalError("could not bind 127.0.0.1:0");
  return port;
}

std::string DefaultBinary() {
  const char* env = getenv("KVSTASH_ETCD");
  return env != nullptr && env[0] != '\0' ? env : "/usr/bin/etcd";
}

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdProcess>> EtcdProcess::Start(const EtcdOptions& options) {
  std::unique_ptr<EtcdProcess> etcd(new EtcdProcess());
  etcd->options_ = options;
  if (etcd->options_.binary.empty()) etcd->options_.binary = DefaultBinary();
  if (access(etcd->options_.binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd binary ", etcd->options_.binary,
                     " not found (install etcd-server, or set KVSTASH_ETCD)"));
  }
  absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-etcd");
  if (!dir.ok()) return dir.status();
  etcd->dir_ = *std::move(dir);
  absl::Status last = absl::UnknownError("no attempt made");
  for (int attempt = 1; attempt <= kPortAttempts; ++attempt) {
    absl::StatusOr<int> client_port = PickFreePort();
    absl::StatusOr<int> peer_port = PickFreePort();
    if (!client_port.ok()) return client_port.status();
    if (!peer_port.ok()) return peer_port.status();
    if (*client_port == *peer_port) {
      last =
          absl::UnavailableError(absl::StrCat("client and peer port both picked ", *client_port));
      continue;
    }
    etcd->client_port_ = *client_port;
    etcd->peer_port_ = *peer_port;
    etcd->endpoint_ = absl::StrCat("127.0.0.1:", etcd->client_port_);
    last = etcd->Spawn();
    if (last.ok()) last = etcd->AwaitReady();
    if (last.ok()) return etcd;
    etcd->Kill();
    if (!absl::StrContains(etcd->LogTail(20), "address already in use")) break;
    // Start over in a clean data directory with other ports.
    std::error_code ignored;
    std::filesystem::remove_all(etcd->dir_->Sub("data"), ignored);
  }
  return absl::Status(last.code(),
                      absl::StrCat(last.message(), "\n--- etcd log tail ---\n", etcd->LogTail(30)));
}

EtcdProcess::~EtcdProcess() { Kill(); }

void EtcdProcess::Kill() {
  if (process_ != nullptr) process_->Kill();
}

absl::Status EtcdProcess::Restart() {
  Kill();
  absl::Status status = Spawn();
  if (status.ok()) status = AwaitReady();
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat(status.message(), "\n--- etcd log tail ---\n", LogTail(30)));
  }
  return absl::OkStatus();
}

std::string EtcdProcess::LogTail(int lines) const {
  const std::string log = ReadFileOrEmpty(LogPath());
  const std::vector<absl::string_view> all = absl::StrSplit(log, '\n', absl::SkipEmpty());
  const size_t first = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0;
  std::string tail;
  for (size_t i = first; i < all.size(); ++i) absl::StrAppend(&tail, all[i], "\n");
  return tail;
}

std::string EtcdProcess::url() const {
  return options_.cert_file.empty() ? endpoint_ : absl::StrCat("https://", endpoint_);
}

cluster::EtcdOptions EtcdProcess::ClientOptions() const {
  cluster::EtcdOptions options;
  options.endpoints = {endpoint_};
  if (!options_.cert_file.empty()) {
    options.tls = true;
    options.tls_files.ca = {options_.ca_file, "ca_file"};
    options.tls_files.cert = {options_.client_cert_file, "client_cert_file"};
    options.tls_files.key = {options_.client_key_file, "client_key_file"};
  }
  return options;
}

absl::Status EtcdProcess::Spawn() {
  const bool tls = !options_.cert_file.empty();
  const std::string client_url =
      absl::StrCat(tls ? "https" : "http", "://127.0.0.1:", client_port_);
  const std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port_);
  SpawnOptions spawn;
  spawn.argv = {options_.binary,
                "--name=kvstash-test",
                absl::StrCat("--data-dir=", dir_->Sub("data")),
                absl::StrCat("--listen-client-urls=", client_url),
                absl::StrCat("--advertise-client-urls=", client_url),
                absl::StrCat("--listen-peer-urls=", peer_url),
                absl::StrCat("--initial-advertise-peer-urls=", peer_url),
                absl::StrCat("--initial-cluster=kvstash-test=", peer_url),
                "--initial-cluster-state=new"};
  if (tls) {
    spawn.argv.push_back("--cert-file=" + options_.cert_file);
    spawn.argv.push_back("--key-file=" + options_.key_file);
    if (options_.client_cert_auth) {
      spawn.argv.push_back("--client-cert-auth");
      spawn.argv.push_back("--trusted-ca-file=" + options_.ca_file);
    }
  }
  spawn.output_path = LogPath();
  absl::StatusOr<std::unique_ptr<Subprocess>> process = Subprocess::Spawn(spawn);
  if (!process.ok()) return process.status();
  process_ = *std::move(process);
  return absl::OkStatus();
}

absl::Status EtcdProcess::AwaitReady() {
  cluster::EtcdOptions client_options = ClientOptions();
  client_options.call_timeout_ms = 500;
  absl::StatusOr<std::unique_ptr<cluster::EtcdClient>> client =
      cluster::EtcdClient::Create(client_options);
  if (!client.ok()) return client.status();
  const absl::Time deadline = absl::Now() + absl::Milliseconds(options_.ready_timeout_ms);
  absl::Status last;
  while (absl::Now() < deadline) {
    if (!process_->Running()) {
      return absl::UnavailableError(
          absl::StrCat("etcd exited early: ", process_->exit_info().ToString()));
    }
    last = (*client)->GetPrefix("/kvstash-etcd-ready").status();

    if (last.ok()) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat("etcd at ", endpoint_, " did not answer within ",
                                                  options_.ready_timeout_ms,
                                                  " ms: ", last.message()));
}

void EtcdTest::SetUp() {
  absl::StatusOr<std::unique_ptr<EtcdProcess>> etcd = EtcdProcess::Start(EtcdProcessOptions());
  if (absl::IsFailedPrecondition(etcd.status())) GTEST_SKIP() << etcd.status();
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  etcd_ = *std::move(etcd);
  absl::StatusOr<std::unique_ptr<cluster::EtcdClient>> client =
      cluster::EtcdClient::Create(EtcdFor());
  ASSERT_TRUE(client.ok()) << client.status();
  client_ = *std::move(client);
}

cluster::EtcdOptions EtcdTest::EtcdFor() const {
  cluster::EtcdOptions options = etcd_->ClientOptions();
  options.call_timeout_ms = 1000;
  return options;
}

}  // namespace kvstash::testing
