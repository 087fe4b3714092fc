// The daemon's side of a cluster against a real etcd (tests/etcd_process.h; skipped when
// etcd is not installed): it registers its member JSON under a lease once it serves,
// withdraws on SIGTERM, drops out after the lease TTL when killed, registers again after
// etcd restarts while serving throughout, and reports the member set in /metrics.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster/etcd_client.h"
#include "cluster/member.h"
#include "gtest/gtest.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "tests/daemon_process.h"
#include "tests/etcd_process.h"
#include "tests/metrics_test_util.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

// Generous: etcd and the daemons share two cores with other builds.
constexpr absl::Duration kWait = absl::Seconds(60);
constexpr char kCluster[] = "ctest";
constexpr int kLeaseTtlS = 2;

class ClusterDaemonTest : public EtcdTest {
 protected:
  std::unique_ptr<DaemonProcess> StartMember(const std::string& id,
                                             std::vector<std::string> more = {}) {
    DaemonOptions options;
    options.set = {"storage.dram.capacity_bytes=32MiB",
                   "cluster.enabled=true",
                   absl::StrCat("cluster.name=", kCluster),
                   absl::StrCat("cluster.etcd_endpoints=", etcd_->endpoint()),
                   absl::StrCat("cluster.member_id=", id),
                   absl::StrCat("cluster.lease_ttl_s=", kLeaseTtlS),
                   "cluster.zone=zone-a",
                   "cluster.peer_probe_interval_ms=200"};
    options.set.insert(options.set.end(), more.begin(), more.end());
    auto daemon = DaemonProcess::Start(options);
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    return daemon.ok() ? *std::move(daemon) : nullptr;
  }

  // The member registered under `id`, NOT_FOUND while there is none.
  absl::StatusOr<cluster::Member> Registered(const std::string& id) {
    const std::string key = cluster::MemberKey(cluster::ClusterPrefix(kCluster), id);
    absl::StatusOr<cluster::EtcdRange> range = client_->GetPrefix(key);
    if (!range.ok()) return range.status();
    for (const cluster::EtcdKeyValue& kv : range->kvs) {
      if (kv.key == key) {
        if (kv.lease == 0) return absl::InternalError("member key without a lease");
        return cluster::MemberFromJson(kv.value);
      }
    }
    return absl::NotFoundError(key);
  }

  bool WaitRegistered(const std::string& id) {
    return PollUntil([&] { return Registered(id).ok(); }, kWait, absl::Milliseconds(100));
  }
  bool WaitGone(const std::string& id) {
    return PollUntil([&] { return absl::IsNotFound(Registered(id).status()); }, kWait,
                     absl::Milliseconds(100));
  }
};

// The value of the sample `series` (name with its labels, as rendered) in a scrape of
// `daemon`; -1 when the scrape fails or has no such sample.
double Metric(const DaemonProcess& daemon, const std::string& series) {
  auto address = MetricsAddress(daemon);
  if (!address.ok()) return -1;
  auto text = Scrape(*address);
  if (!text.ok()) return -1;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (!absl::ConsumePrefix(&line, series) || !absl::ConsumePrefix(&line, " ")) continue;
    double value = 0;
    return absl::SimpleAtod(line, &value) ? value : -1;
  }
  return -1;
}

bool WaitMetric(const DaemonProcess& daemon, const std::string& series, double want) {
  return PollUntil([&] { return Metric(daemon, series) == want; }, kWait, absl::Milliseconds(100));
}

// True when the daemon answers Health as serving.
bool Serving(const DaemonProcess& daemon) {
  auto stub = RawStub(daemon.address());
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::HealthResponse response;
  grpc::Status s = stub->Health(&context, v1::HealthRequest(), &response);
  return s.ok() && response.state() == v1::HealthResponse::SERVING;
}

TEST_F(ClusterDaemonTest, RegistersItsMemberOnceServing) {
  std::unique_ptr<DaemonProcess> daemon = StartMember("node-a");
  ASSERT_NE(daemon, nullptr);
  ASSERT_TRUE(WaitRegistered("node-a"));
  absl::StatusOr<cluster::Member> m = Registered("node-a");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->id, "node-a");
  EXPECT_EQ(m->grpc_address, daemon->address());
  EXPECT_EQ(m->ucx_address, daemon->ucx_address());
  EXPECT_EQ(m->zone, "zone-a");
  EXPECT_EQ(m->dram_capacity_bytes, 32u << 20);
  EXPECT_EQ(m->nvme_capacity_bytes, 0u);  // DaemonProcess turns the NVMe tier off
  EXPECT_GT(m->started_unix_ms, 0);
  EXPECT_TRUE(WaitMetric(*daemon, "kvstash_cluster_registered", 1));
  EXPECT_TRUE(WaitMetric(*daemon, "kvstash_cluster_members", 1));
}

TEST_F(ClusterDaemonTest, DefaultIdIsHostNameAndPort) {
  DaemonOptions options;
  options.set = {"storage.dram.capacity_bytes=32MiB", "cluster.enabled=true",
                 absl::StrCat("cluster.name=", kCluster),
                 absl::StrCat("cluster.etcd_endpoints=", etcd_->endpoint())};
  auto daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  const std::string id = absl::StrCat(host, "-", (*daemon)->port());
  ASSERT_TRUE(WaitRegistered(id)) << id;
}

TEST_F(ClusterDaemonTest, SigtermWithdrawsTheMemberBeforeExit) {
  std::unique_ptr<DaemonProcess> daemon = StartMember("node-b");
  ASSERT_NE(daemon, nullptr);
  ASSERT_TRUE(WaitRegistered("node-b"));
  ASSERT_TRUE(daemon->Signal(SIGTERM).ok());
  auto exit = daemon->WaitExit(kWait);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->exited && exit->code == 0);
  // Withdrawn before the process ended: no waiting for the lease.
  EXPECT_TRUE(absl::IsNotFound(Registered("node-b").status())) << Registered("node-b").status();
}

TEST_F(ClusterDaemonTest, KilledMemberDropsOutAfterTheLease) {
  std::unique_ptr<DaemonProcess> daemon = StartMember("node-c");
  ASSERT_NE(daemon, nullptr);
  ASSERT_TRUE(WaitRegistered("node-c"));
  daemon->Kill();
  EXPECT_TRUE(WaitGone("node-c"));
}

TEST_F(ClusterDaemonTest, RegistersAgainAfterEtcdRestartsAndServesThroughout) {
  std::unique_ptr<DaemonProcess> daemon = StartMember("node-d");
  ASSERT_NE(daemon, nullptr);
  ASSERT_TRUE(WaitRegistered("node-d"));
  etcd_->Kill();
  // Cut off from etcd, its lease cannot be refreshed: it stops counting itself registered,
  // and keeps serving.
  EXPECT_TRUE(WaitMetric(*daemon, "kvstash_cluster_registered", 0));
  EXPECT_TRUE(Serving(*daemon));
  ASSERT_TRUE(etcd_->Restart().ok());
  EXPECT_TRUE(WaitMetric(*daemon, "kvstash_cluster_registered", 1));
  EXPECT_TRUE(WaitRegistered("node-d"));
  // A live registration, not one left from before the restart that etcd will expire:
  // still there after several lease TTLs.
  absl::SleepFor(absl::Seconds(3 * kLeaseTtlS));
  EXPECT_TRUE(Registered("node-d").ok()) << Registered("node-d").status();
  EXPECT_TRUE(Serving(*daemon));
  EXPECT_GE(Metric(*daemon, "kvstash_cluster_etcd_errors_total"), 1);
}

TEST_F(ClusterDaemonTest, MetricsShowTheMembersAndTheirHealth) {
  std::unique_ptr<DaemonProcess> a = StartMember("node-e");
  std::unique_ptr<DaemonProcess> b = StartMember("node-f");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(WaitMetric(*a, "kvstash_cluster_members", 2));
  EXPECT_TRUE(WaitMetric(*b, "kvstash_cluster_members", 2));
  EXPECT_TRUE(WaitMetric(*a, "kvstash_cluster_registered", 1));
  EXPECT_TRUE(WaitMetric(*a, "kvstash_cluster_peer_up{member=\"node-f\"}", 1));
  EXPECT_TRUE(WaitMetric(*b, "kvstash_cluster_peer_up{member=\"node-e\"}", 1));
  EXPECT_GE(Metric(*a, "kvstash_cluster_member_changes_total"), 1);
  EXPECT_EQ(Metric(*a, "kvstash_cluster_peer_up{member=\"node-e\"}"), -1);  // not itself
  const double changes = Metric(*a, "kvstash_cluster_member_changes_total");
  ASSERT_TRUE(b->Signal(SIGTERM).ok());
  ASSERT_TRUE(b->WaitExit(kWait).ok());
  EXPECT_TRUE(WaitMetric(*a, "kvstash_cluster_members", 1));
  EXPECT_GT(Metric(*a, "kvstash_cluster_member_changes_total"), changes);
}

TEST_F(ClusterDaemonTest, StartsAndServesWhileEtcdIsDown) {
  etcd_->Kill();
  std::unique_ptr<DaemonProcess> daemon = StartMember("node-g");
  ASSERT_NE(daemon, nullptr);
  EXPECT_TRUE(Serving(*daemon));
  EXPECT_EQ(Metric(*daemon, "kvstash_cluster_registered"), 0);
  ASSERT_TRUE(etcd_->Restart().ok());
  EXPECT_TRUE(WaitRegistered("node-g"));
  EXPECT_TRUE(WaitMetric(*daemon, "kvstash_cluster_members", 1));
}

TEST_F(ClusterDaemonTest, CliListsTheMembersWithCapacityAndUsage) {
  std::unique_ptr<DaemonProcess> a = StartMember("node-h");
  std::unique_ptr<DaemonProcess> b = StartMember("node-i");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(WaitRegistered("node-h") && WaitRegistered("node-i"));
  const std::string uri = absl::StrCat("etcd://", etcd_->endpoint(), "/", kCluster);
  auto listed = RunCommand({KVSTASH_CLI_PATH, "cluster", uri}, absl::Seconds(60));
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->exit.exited && listed->exit.code == 0) << listed->output;
  for (const DaemonProcess* d : {a.get(), b.get()}) {
    EXPECT_TRUE(absl::StrContains(listed->output, d->address())) << listed->output;
  }
  for (const char* want : {"node-h", "node-i", "zone-a", "0 B / 32.0 MiB", "idle", "2 members"}) {
    EXPECT_TRUE(absl::StrContains(listed->output, want)) << want << "\n" << listed->output;
  }
  EXPECT_FALSE(absl::StrContains(listed->output, ": stats: ")) << listed->output;

  // A static list names the members by address; one daemon is no cluster.
  auto fixed = RunCommand(
      {KVSTASH_CLI_PATH, "cluster", absl::StrCat("static://", a->address(), ",", b->address())},
      absl::Seconds(60));
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_TRUE(fixed->exit.exited && fixed->exit.code == 0) << fixed->output;
  EXPECT_TRUE(absl::StrContains(fixed->output, "2 members")) << fixed->output;
  auto single = RunCommand({KVSTASH_CLI_PATH, "cluster", a->uri()}, absl::Seconds(60));
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_TRUE(single->exit.exited && single->exit.code == 1) << single->output;
  EXPECT_TRUE(absl::StrContains(single->output, "FAILED_PRECONDITION")) << single->output;
}

}  // namespace
}  // namespace kvstash::testing
