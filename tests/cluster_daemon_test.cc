// The daemon's side of a cluster against a real etcd (tests/etcd_process.h; skipped when
// etcd is not installed): it registers its member JSON under a lease once it serves,
// withdraws on SIGTERM, drops out after the lease TTL when killed, registers again after
// etcd restarts while serving throughout, and reports the member set in /metrics.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster/etcd_client.h"
#include "cluster/member.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "testing/temp_dir.h"
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
                   absl::StrCat("cluster.etcd_endpoints=", etcd_->url()),
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
  // DaemonProcess turns the NVMe tier off.
  EXPECT_EQ(m->tiers, (std::vector<cluster::TierCapacity>{{"dram", 32u << 20}}));
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

// Certificates of tests/tls_certs.sh, made once per test binary and removed at its exit;
// empty when that failed.
std::string CertDir() {
  static const std::unique_ptr<TempDir> dir = []() -> std::unique_ptr<TempDir> {
    absl::StatusOr<std::unique_ptr<TempDir>> made = TempDir::Create("kvstash-cluster-certs");
    if (!made.ok() || !MakeTestCertificates((*made)->path()).ok()) return nullptr;
    return *std::move(made);
  }();
  return dir == nullptr ? "" : dir->path();
}

std::string Cert(const std::string& name) { return CertDir() + "/" + name; }

// A secured cluster: etcd serves https and requires client certificates; the members serve
// gRPC with mutual TLS (peer.crt allows both ends, as their probes need).
class ClusterTlsTest : public ClusterDaemonTest {
 protected:
  void SetUp() override {
    ASSERT_FALSE(CertDir().empty()) << "tests/tls_certs.sh failed";
    ClusterDaemonTest::SetUp();
  }
  EtcdOptions EtcdProcessOptions() const override {
    EtcdOptions o;
    o.cert_file = Cert("server.crt");
    o.key_file = Cert("server.key");
    o.ca_file = Cert("ca.crt");
    o.client_cert_auth = true;
    o.client_cert_file = Cert("client.crt");
    o.client_key_file = Cert("client.key");
    return o;
  }
  static std::vector<std::string> EtcdFiles() {
    return {"cluster.etcd_ca_file=" + Cert("ca.crt"),
            "cluster.etcd_cert_file=" + Cert("client.crt"),
            "cluster.etcd_key_file=" + Cert("client.key")};
  }
  std::unique_ptr<DaemonProcess> StartSecureMember(const std::string& id,
                                                   std::vector<std::string> more = {}) {
    std::vector<std::string> set = EtcdFiles();
    set.insert(set.end(), {"server.tls.cert_file=" + Cert("peer.crt"),
                           "server.tls.key_file=" + Cert("peer.key"),
                           "server.tls.client_ca_file=" + Cert("ca.crt"), "ucx.enabled=false"});
    set.insert(set.end(), more.begin(), more.end());
    return StartMember(id, set);
  }
  // One Put through an etcd client with `tls` in place of the fixture's files.
  absl::Status PutWith(const TlsChannelFiles& tls, bool use_tls = true) {
    cluster::EtcdOptions o = EtcdFor();
    o.tls = use_tls;
    o.tls_files = tls;
    absl::StatusOr<std::unique_ptr<cluster::EtcdClient>> c = cluster::EtcdClient::Create(o);
    if (!c.ok()) return c.status();
    return (*c)->Put("/kvstash-tls-test/key", "value");
  }
};

TEST_F(ClusterTlsTest, EtcdAnswersOnlyWithItsCaAndAClientCertificate) {
  const TlsChannelFiles good = EtcdFor().tls_files;
  ASSERT_TRUE(PutWith(good).ok());
  TlsChannelFiles no_cert;
  no_cert.ca = good.ca;
  TlsChannelFiles other_ca = good;
  other_ca.ca = {Cert("other_ca.crt"), "ca"};
  TlsChannelFiles system_roots = good;
  system_roots.ca = {};
  for (const auto& [what, status] : std::vector<std::pair<std::string, absl::Status>>{
           {"no client certificate", PutWith(no_cert)},
           {"another CA", PutWith(other_ca)},
           {"the system's roots", PutWith(system_roots)},
           {"plaintext", PutWith({}, false)}}) {
    EXPECT_TRUE(absl::IsUnavailable(status)) << what << ": " << status;
  }
}

TEST_F(ClusterTlsTest, MutualTlsMembersProbeEachOtherAndServeAnEtcdsClient) {
  std::unique_ptr<DaemonProcess> a = StartSecureMember("node-s1");
  std::unique_ptr<DaemonProcess> b = StartSecureMember("node-s2");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(WaitRegistered("node-s1") && WaitRegistered("node-s2"));
  EXPECT_TRUE(WaitMetric(*a, "kvstash_cluster_members", 2));
  // Under mutual TLS a probe is answered only with the member's own certificate.
  EXPECT_TRUE(WaitMetric(*a, "kvstash_cluster_peer_up{member=\"node-s2\"}", 1));
  EXPECT_TRUE(WaitMetric(*b, "kvstash_cluster_peer_up{member=\"node-s1\"}", 1));

  ClientOptions options;
  options.tls_ca_file = Cert("ca.crt");
  options.tls_cert_file = Cert("client.crt");
  options.tls_key_file = Cert("client.key");
  options.cluster.transport = "grpcs";
  options.cluster.etcd_ca_file = Cert("ca.crt");
  options.cluster.etcd_cert_file = Cert("client.crt");
  options.cluster.etcd_key_file = Cert("client.key");
  const std::string uri = absl::StrCat("etcds://", etcd_->endpoint(), "/", kCluster);
  auto client = ConnectClient(uri, options);
  ASSERT_TRUE(client.ok()) << client.status();
  auto ns = (*client)->OpenNamespace(TestNamespace("cluster-tls"));
  ASSERT_TRUE(ns.ok()) << ns.status();
  std::mt19937_64 rng(7);
  std::vector<Key128> keys = PutFresh(**client, *ns, rng, 24, 4096, 8);
  ASSERT_EQ(keys.size(), 24u);
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  ASSERT_TRUE(GetMany(**client, *ns, keys, 4096, &bufs, &items).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(items[i].status.ok()) << i << ": " << items[i].status;
    EXPECT_EQ(FirstPatternMismatch(keys[i], bufs[i].data(), 4096), -1) << i;
  }
  auto status = (*client)->Cluster();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->members.size(), 2u);

  auto listed =
      RunCommand({KVSTASH_CLI_PATH, "cluster", uri, "--etcd-ca", Cert("ca.crt"), "--etcd-cert",
                  Cert("client.crt"), "--etcd-key", Cert("client.key"), "--tls-ca", Cert("ca.crt"),
                  "--tls-cert", Cert("client.crt"), "--tls-key", Cert("client.key")},
                 absl::Seconds(60));
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->exit.exited && listed->exit.code == 0) << listed->output;
  EXPECT_TRUE(absl::StrContains(listed->output, "2 members")) << listed->output;
  EXPECT_FALSE(absl::StrContains(listed->output, ": stats: ")) << listed->output;

  // Without the etcd options the etcds:// client cannot read the member set.
  ClientOptions no_etcd_cert = options;
  no_etcd_cert.cluster.etcd_cert_file.clear();
  no_etcd_cert.cluster.etcd_key_file.clear();
  no_etcd_cert.connect_timeout_ms = 3000;
  EXPECT_FALSE(Client::Connect(uri, no_etcd_cert).ok());
}

TEST_F(ClusterTlsTest, AProbeThatCannotVerifyItsPeerSaysWhyInTheLog) {
  std::unique_ptr<DaemonProcess> a = StartSecureMember("node-s4");
  std::unique_ptr<DaemonProcess> b =
      StartSecureMember("node-s5", {"cluster.peer_ca_file=" + Cert("other_ca.crt")});
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(WaitMetric(*a, "kvstash_cluster_peer_up{member=\"node-s5\"}", 1));
  EXPECT_TRUE(PollUntil(
      [&] {
        return Metric(*b, "kvstash_cluster_peer_probe_errors_total{member=\"node-s4\"}") >= 1;
      },
      kWait, absl::Milliseconds(100)));
  EXPECT_EQ(Metric(*b, "kvstash_cluster_peer_up{member=\"node-s4\"}"), 0);
  EXPECT_TRUE(PollUntil(
      [&] {
        const std::string log = b->Log();
        return absl::StrContains(log, "cluster: peer probe failed") &&
               absl::StrContains(log, "node-s4") && absl::StrContains(log, "UNAVAILABLE");
      },
      kWait, absl::Milliseconds(100)))
      << b->LogTail(20);
}

TEST_F(ClusterTlsTest, AMemberWithoutEtcdsCaStaysOutAndABadFileStopsTheStart) {
  // https:// with the system's roots: etcd's certificate is not trusted, so the daemon
  // serves on its own and keeps retrying.
  std::unique_ptr<DaemonProcess> lone =
      StartMember("node-s3", {"cluster.etcd_cert_file=" + Cert("client.crt"),
                              "cluster.etcd_key_file=" + Cert("client.key")});
  ASSERT_NE(lone, nullptr);
  EXPECT_TRUE(PollUntil([&] { return Metric(*lone, "kvstash_cluster_etcd_errors_total") >= 1; },
                        kWait, absl::Milliseconds(100)));
  EXPECT_TRUE(absl::IsNotFound(Registered("node-s3").status()));

  DaemonOptions bad;
  bad.set = {"cluster.enabled=true", absl::StrCat("cluster.etcd_endpoints=", etcd_->url()),
             "cluster.etcd_ca_file=/nonexistent/etcd-ca.crt"};
  auto refused = DaemonProcess::Start(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "cluster.etcd_ca_file"))
      << refused.status();
}

}  // namespace
}  // namespace kvstash::testing
