// Registrar against a real etcd on loopback: registration, withdrawal, re-registration.
#include "cluster/registrar.h"

#include <memory>
#include <string>

#include "cluster/cluster_test_util.h"
#include "gtest/gtest.h"
#include "tests/etcd_process.h"

namespace kvstash::cluster {
namespace {

using ::kvstash::cluster::testing::TcpRelay;
using ::kvstash::cluster::testing::WaitFor;
using ::kvstash::testing::EtcdProcess;
using ::kvstash::testing::EtcdTest;

constexpr char kPrefix[] = "/kvstash/regtest";

class RegistrarTest : public EtcdTest {
 protected:
  RegistrarOptions Options() const {
    RegistrarOptions options;
    options.etcd = EtcdFor();
    options.prefix = kPrefix;
    options.self.id = "node-a";
    options.self.grpc_address = "127.0.0.1:7070";
    options.self.tiers = {{"dram", 1 << 30}};
    options.self.started_unix_ms = 1234;
    options.lease_ttl_s = 2;
    return options;
  }

  // The registered key's value and lease; lease 0 when the key is absent or etcd failed.
  EtcdKeyValue Registered() {
    auto range = client_->GetPrefix(MemberKey(kPrefix, "node-a"));
    if (!range.ok() || range->kvs.empty()) return {};
    return range->kvs[0];
  }

  int EtcdPort() const {
    const std::string& endpoint = etcd_->endpoint();
    return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  }
};

TEST_F(RegistrarTest, RegistersAndStopWithdrawsAtOnce) {
  auto registrar = Registrar::Create(Options());
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  EXPECT_TRUE((*registrar)->stats().registered);
  EXPECT_EQ((*registrar)->stats().registrations, 1u);
  EtcdKeyValue kv = Registered();
  ASSERT_NE(kv.lease, 0);
  auto member = MemberFromJson(kv.value);
  ASSERT_TRUE(member.ok()) << member.status();
  EXPECT_EQ(*member, Options().self);

  (*registrar)->Stop();
  EXPECT_EQ(Registered().lease, 0);
  EXPECT_TRUE(absl::IsNotFound(client_->KeepAliveOnce(kv.lease).status()));
  EXPECT_FALSE((*registrar)->stats().registered);
  (*registrar)->Stop();  // idempotent
}

TEST_F(RegistrarTest, KeepsTheLeaseAlivePastItsTtl) {
  RegistrarOptions options = Options();
  options.lease_ttl_s = 5;
  auto registrar = Registrar::Create(options);
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  const int64_t lease = Registered().lease;
  ASSERT_NE(lease, 0);
  // Refreshes are at least a third of the TTL apart: four of them outlast the TTL.
  EXPECT_TRUE(WaitFor([&] { return (*registrar)->stats().refreshes >= 4; }));
  EXPECT_EQ(Registered().lease, lease);
  EXPECT_EQ((*registrar)->stats().registrations, 1u);
  EXPECT_TRUE((*registrar)->stats().registered);
}

TEST_F(RegistrarTest, RefreshMovesPastAHungEndpointWithinTheLease) {
  TcpRelay relay(EtcdPort());
  ASSERT_FALSE(relay.endpoint().empty());
  RegistrarOptions options = Options();
  options.lease_ttl_s = 5;
  // One endpoint's attempt may outlast the lease; the refresh must not wait that long.
  options.etcd.call_timeout_ms = 30000;
  options.etcd.endpoints = {relay.endpoint(), etcd_->endpoint()};
  auto registrar = Registrar::Create(options);
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  const int64_t lease = Registered().lease;
  ASSERT_NE(lease, 0);
  relay.Hang();
  const uint64_t refreshes = (*registrar)->stats().refreshes;
  EXPECT_TRUE(WaitFor([&] { return (*registrar)->stats().refreshes >= refreshes + 4; }));
  EXPECT_GT((*registrar)->stats().etcd_errors, 0u);  // the hung endpoint was tried
  EXPECT_EQ((*registrar)->stats().registrations, 1u);
  EXPECT_EQ(Registered().lease, lease);
  relay.Restore();
}

TEST_F(RegistrarTest, PutsItsKeyBackWhenItGoesMissing) {
  // A TTL a loaded host cannot outlast between two refreshes: the lease must stay the same.
  RegistrarOptions options = Options();
  options.lease_ttl_s = 10;
  auto registrar = Registrar::Create(options);
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  const int64_t lease = Registered().lease;
  ASSERT_NE(lease, 0);
  ASSERT_TRUE(client_->Delete(MemberKey(kPrefix, "node-a")).ok());
  // The restore is counted after its put returns, so the key may be back a moment earlier.
  EXPECT_TRUE(WaitFor(
      [&] { return Registered().lease == lease && (*registrar)->stats().key_restores >= 1; }));
  EXPECT_EQ((*registrar)->stats().registrations, 1u);

  // A key an older registration left (here without a lease, so it would never expire) is
  // taken over too.
  Member older = Options().self;
  older.started_unix_ms = 1;
  ASSERT_TRUE(client_->Put(MemberKey(kPrefix, "node-a"), MemberToJson(older)).ok());
  EXPECT_TRUE(WaitFor([&] { return Registered().lease == lease; }));
  EXPECT_TRUE(MemberFromJson(Registered().value).ok());
  EXPECT_EQ(*MemberFromJson(Registered().value), Options().self);
}

TEST_F(RegistrarTest, StopLeavesTheKeyOfANewerIncarnationAlone) {
  auto registrar = Registrar::Create(Options());
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  ASSERT_NE(Registered().lease, 0);
  // The same member id restarted elsewhere and registered under its own lease.
  Member newer = Options().self;
  newer.grpc_address = "127.0.0.1:7171";
  newer.started_unix_ms = Options().self.started_unix_ms + 1000;
  auto lease = client_->GrantLease(30);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(client_->Put(MemberKey(kPrefix, "node-a"), MemberToJson(newer), *lease).ok());
  // The old one notices it lost the key and does not take it back.
  EXPECT_TRUE(WaitFor([&] { return !(*registrar)->stats().registered; }));
  EXPECT_EQ(Registered().lease, *lease);
  (*registrar)->Stop();
  EtcdKeyValue kv = Registered();
  EXPECT_EQ(kv.lease, *lease);
  auto member = MemberFromJson(kv.value);
  ASSERT_TRUE(member.ok()) << member.status();
  EXPECT_EQ(*member, newer);
}

TEST_F(RegistrarTest, StopRightAfterANewerIncarnationRegisteredLeavesItsKey) {
  auto registrar = Registrar::Create(Options());
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  Member newer = Options().self;
  newer.started_unix_ms = Options().self.started_unix_ms + 1000;
  auto lease = client_->GrantLease(30);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(client_->Put(MemberKey(kPrefix, "node-a"), MemberToJson(newer), *lease).ok());
  (*registrar)->Stop();
  EXPECT_EQ(Registered().lease, *lease);
}

TEST_F(RegistrarTest, RegistersAgainWhenTheLeaseIsRevoked) {
  auto registrar = Registrar::Create(Options());
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  const int64_t lease = Registered().lease;
  ASSERT_NE(lease, 0);
  ASSERT_TRUE(client_->RevokeLease(lease).ok());
  EXPECT_TRUE(WaitFor([&] {
    const int64_t now = Registered().lease;
    return now != 0 && now != lease;
  }));
  EXPECT_TRUE(WaitFor([&] { return (*registrar)->stats().registrations == 2; }));
  EXPECT_TRUE((*registrar)->stats().registered);
}

TEST_F(RegistrarTest, RegisteredAgainAfterEtcdRestart) {
  auto registrar = Registrar::Create(Options());
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  const int64_t lease = Registered().lease;
  ASSERT_NE(lease, 0);
  etcd_->Kill();
  // Long enough for the lease to lapse from the daemon's point of view.
  EXPECT_TRUE(WaitFor([&] { return !(*registrar)->stats().registered; }));
  EXPECT_GT((*registrar)->stats().etcd_errors, 0u);
  ASSERT_TRUE(etcd_->Restart().ok());
  // etcd restores the old lease with a fresh TTL, so its key is back at once; the daemon,
  // having given that lease up, registers under a new one.
  EXPECT_TRUE(WaitFor([&] {
    const int64_t now = Registered().lease;
    return now != 0 && now != lease;
  }));
  EXPECT_TRUE(WaitFor([&] { return (*registrar)->stats().registered; }));
  EXPECT_EQ((*registrar)->stats().registrations, 2u);
}

TEST_F(RegistrarTest, StartsWhileEtcdIsDownAndRegistersWhenItIsUp) {
  etcd_->Kill();
  auto registrar = Registrar::Create(Options());
  ASSERT_TRUE(registrar.ok()) << registrar.status();
  EXPECT_FALSE((*registrar)->stats().registered);
  EXPECT_GT((*registrar)->stats().etcd_errors, 0u);
  ASSERT_TRUE(etcd_->Restart().ok());
  EXPECT_TRUE(WaitFor([&] { return Registered().lease != 0; }));
  EXPECT_TRUE(WaitFor([&] { return (*registrar)->stats().registered; }));
  registrar->reset();  // destruction withdraws too
  EXPECT_EQ(Registered().lease, 0);
}

TEST(RegistrarOptionsTest, BadOptionsAreInvalidArgument) {
  RegistrarOptions options;
  options.etcd.endpoints = {"127.0.0.1:1"};
  options.prefix = "/kvstash/x";
  options.self.id = "n1";
  options.lease_ttl_s = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(Registrar::Create(options).status()));
  options.lease_ttl_s = 3601;
  EXPECT_TRUE(absl::IsInvalidArgument(Registrar::Create(options).status()));
  options.lease_ttl_s = 10;
  options.prefix = "kvstash/x";
  EXPECT_TRUE(absl::IsInvalidArgument(Registrar::Create(options).status()));
  options.prefix = "/kvstash/x";
  options.self.id = "bad id";
  EXPECT_TRUE(absl::IsInvalidArgument(Registrar::Create(options).status()));
  options.self.id = "n1";
  options.self.zone = "r\xe9gion";  // Latin-1: JSON readers would reject the member
  EXPECT_TRUE(absl::IsInvalidArgument(Registrar::Create(options).status()));
  options.self.zone = "r\xc3\xa9gion";
  options.self.grpc_address = "no-port";
  EXPECT_TRUE(absl::IsInvalidArgument(Registrar::Create(options).status()));
  options.self.grpc_address = "h:1";
  options.self.ucx_address = "h:0";
  EXPECT_TRUE(absl::IsInvalidArgument(Registrar::Create(options).status()));
  options.self.ucx_address = "";
  options.etcd.endpoints.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(Registrar::Create(options).status()));
}

}  // namespace
}  // namespace kvstash::cluster
