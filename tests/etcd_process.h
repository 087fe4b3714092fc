// EtcdProcess: runs a real single-node etcd (/usr/bin/etcd, Debian's etcd-server) as a
// child process on loopback for cluster tests and benchmarks, in a temporary data
// directory, on free ports.
//
//   auto etcd = kvstash::testing::EtcdProcess::Start({});
//   ASSERT_TRUE(etcd.ok()) << etcd.status();
//   std::string endpoint = (*etcd)->endpoint();  // "127.0.0.1:PORT"
//
// Restart() kills it (SIGKILL) and starts it again on the same ports and data directory,
// so its keys and leases survive as they would a crash. The destructor kills and reaps it
// and removes the directory.
//
// Thread-safety: not thread-safe; owned by the test's main thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster/etcd_client.h"
#include "gtest/gtest.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace kvstash::testing {

struct EtcdOptions {
  // Path of the etcd binary; empty: $KVSTASH_ETCD, else /usr/bin/etcd.
  std::string binary;
  // How long Start waits for etcd to answer.
  int64_t ready_timeout_ms = 20000;
  // TLS for clients (peers stay plaintext): etcd serves https with cert_file/key_file;
  // ca_file signs that certificate and, with client_cert_auth, the clients' certificates
  // etcd requires. Start's readiness check presents client_cert_file/client_key_file.
  // Empty cert_file: plaintext.
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  bool client_cert_auth = false;
  std::string client_cert_file;
  std::string client_key_file;
};

class EtcdProcess {
 public:
  // FAILED_PRECONDITION (tests GTEST_SKIP on it) when the binary is missing; other errors
  // when it exits early (its log tail in the message) or does not answer in time.
  static absl::StatusOr<std::unique_ptr<EtcdProcess>> Start(const EtcdOptions& options);
  ~EtcdProcess();

  // "127.0.0.1:PORT", its client endpoint.
  const std::string& endpoint() const { return endpoint_; }
  // "https://127.0.0.1:PORT" with TLS, else endpoint(): as cluster.etcd_endpoints takes it.
  std::string url() const;
  // Options of a client that reaches it: its endpoint, and with TLS the CA and the client
  // certificate of the options it was started with.
  cluster::EtcdOptions ClientOptions() const;
  // SIGKILL + reap.
  void Kill();
  // Kill() if running, then start again on the same ports and data.
  absl::Status Restart();
  std::string LogTail(int lines) const;

 private:
  EtcdProcess() = default;
  absl::Status Spawn();
  // Waits until etcd answers a read, or exits, or ready_timeout_ms passes.
  absl::Status AwaitReady();
  std::string LogPath() const { return dir_->Sub("etcd.log"); }

  EtcdOptions options_;
  std::unique_ptr<TempDir> dir_;
  std::string endpoint_;
  int client_port_ = 0;
  int peer_port_ = 0;
  std::unique_ptr<::kvstash::Subprocess> process_;
};

// A fixture with a fresh etcd (the test is skipped where the binary is missing) and a
// client of it.
class EtcdTest : public ::testing::Test {
 protected:
  void SetUp() override;
  // How SetUp starts etcd; plaintext unless a fixture says otherwise.
  virtual EtcdOptions EtcdProcessOptions() const { return {}; }
  // A client's options for this etcd: its endpoint (and TLS files), 1 s calls.
  cluster::EtcdOptions EtcdFor() const;

  std::unique_ptr<EtcdProcess> etcd_;
  std::unique_ptr<cluster::EtcdClient> client_;
};

}  // namespace kvstash::testing
