// ClusterFixture: a real etcd (EtcdProcess) and N real kvstashd members (DaemonProcess)
// on loopback that register themselves in it, for end-to-end tests of the cluster mode.
//
//   class MyTest : public ClusterFixture {
//    protected:
//     void SetUp() override {
//       ASSERT_NO_FATAL_FAILURE(StartCluster({}));  // skips when etcd is missing
//     }
//   };
//   auto client = ConnectCluster();  // Client::Connect(uri(), ...), "etcd://..."
//
// Member i has id "m<i>", its own data directory (NVMe tier on, write-through, so its
// chunks survive kill -9) and its own gRPC and UCX ports, all kept across RestartMember(i),
// as a node keeps its disk and address across a crash. Every test gets its own cluster name
// (its etcd prefix), derived from the test's name.
//
// Thread-safety: not thread-safe; owned by the test's main thread. Clients it connects are
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/member.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "testing/temp_dir.h"
#include "tests/daemon_process.h"
#include "tests/etcd_process.h"

namespace kvstash::testing {

struct ClusterFixtureOptions {
  // Members started by StartCluster.
  int members = 3;
  // cluster.lease_ttl_s of every member: how long a killed member stays registered.
  int64_t lease_ttl_s = 2;
  // Settings of every member, after the fixture's own (DaemonOptions::set; later wins).
  std::vector<std::string> set;
};

class ClusterFixture : public ::testing::Test {
 protected:
  void TearDown() override;

  // Starts etcd and options.members members and waits until all are registered.
  // GTEST_SKIPs when etcd is not installed: callers check IsSkipped() after it.
  void StartCluster(const ClusterFixtureOptions& options);
  // Starts member m<size()> and waits until it is registered; returns its index.
  int AddMember();
  // SIGKILL: the member stops answering at once and stays registered until its lease lapses.
  void KillMember(int i);
  // Starts member i again (after KillMember) with the same id, data directory and ports,
  // and waits until it is registered again.
  void RestartMember(int i);
  // Kills etcd (SIGKILL) and starts it again on the same ports and data.
  void RestartEtcd();
  // Kills etcd only, for tests of a cluster that goes on without it.
  void KillEtcd();

  // "etcd://127.0.0.1:PORT/<name>", what a client connects to.
  std::string uri() const;
  const std::string& cluster_name() const { return name_; }
  const std::string& etcd_endpoint() const { return etcd_->endpoint(); }
  int size() const { return static_cast<int>(members_.size()); }
  // "m<i>".
  static std::string MemberId(int i);
  // Member i's process; null while it is killed.
  DaemonProcess* member(int i) { return members_[i].process.get(); }

  // The members registered in etcd now, sorted by id. UNAVAILABLE when etcd is down.
  absl::StatusOr<std::vector<cluster::Member>> Registered();
  // Waits (generously) until exactly `ids` are registered; false with the last set logged.
  bool AwaitRegistered(const std::vector<std::string>& ids);
  // Ids of the members that are running now.
  std::vector<std::string> LiveIds() const;

  // A cluster client to uri() with generous deadlines.
  absl::StatusOr<std::unique_ptr<Client>> ConnectCluster(ClientOptions options = {});
  // A client to member i alone, over gRPC, for looking at what that member holds.
  absl::StatusOr<std::unique_ptr<Client>> ConnectMember(int i);

  // How long a test waits for something the cluster does on its own (a lease lapsing, a
  // watch delivering): generous, for sanitizer builds on a loaded machine.
  absl::Duration settle_timeout() const;

 private:
  struct MemberSlot {
    std::string data_dir;
    int grpc_port = 0;  // 0 until first started: then the ports it bound
    int ucx_port = 0;
    std::unique_ptr<DaemonProcess> process;
  };

  void StartMember(int i, int64_t retry_start_ms);

  ClusterFixtureOptions options_;
  std::string name_;
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::vector<MemberSlot> members_;
  // Killed incarnations, kept until the test ends so their logs print when it failed.
  std::vector<std::unique_ptr<DaemonProcess>> retired_;
};

}  // namespace kvstash::testing
