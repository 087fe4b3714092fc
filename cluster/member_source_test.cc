// The etcd member source against a real etcd on loopback: joins, leaves, etcd outages.
#include "cluster/member_source.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cluster/cluster_test_util.h"
#include "cluster/registrar.h"
#include "gtest/gtest.h"
#include "testing/subprocess.h"
#include "tests/etcd_process.h"

namespace kvstash::cluster {
namespace {

using ::kvstash::cluster::testing::TcpRelay;
using ::kvstash::cluster::testing::WaitFor;
using ::kvstash::testing::EtcdProcess;
using ::kvstash::testing::EtcdTest;

constexpr char kPrefix[] = "/kvstash/srctest";

// The member sets a listener got, as lists of ids; declare it before the source so the
// source, destroyed first, never calls into a freed listener.
class Sets {
 public:
  MemberSource::Listener Listener() {
    return [this](const std::vector<Member>& members) {
      std::vector<std::string> ids;
      for (const Member& m : members) ids.push_back(m.id);
      absl::MutexLock lock(&mu_);
      sets_.push_back(std::move(ids));
    };
  }
  std::vector<std::string> Last() {
    absl::MutexLock lock(&mu_);
    return sets_.empty() ? std::vector<std::string>{"<none>"} : sets_.back();
  }
  size_t Count() {
    absl::MutexLock lock(&mu_);
    return sets_.size();
  }

 private:
  absl::Mutex mu_;
  std::vector<std::vector<std::string>> sets_ ABSL_GUARDED_BY(mu_);
};

class EtcdMemberSourceTest : public EtcdTest {
 protected:
  std::unique_ptr<Registrar> Register(const std::string& id) {
    RegistrarOptions options;
    options.etcd = EtcdFor();
    options.prefix = kPrefix;
    options.self.id = id;
    options.self.grpc_address = id + ":7070";
    options.lease_ttl_s = 2;
    auto registrar = Registrar::Create(options);
    EXPECT_TRUE(registrar.ok()) << registrar.status();
    return registrar.ok() ? *std::move(registrar) : nullptr;
  }

  absl::Status PutMember(const std::string& id) {
    Member m;
    m.id = id;
    return client_->Put(MemberKey(kPrefix, id), MemberToJson(m));
  }

  // A source reaching etcd at `endpoint` (the test's etcd unless told).
  std::unique_ptr<MemberSource> Source(const std::string& endpoint = "") {
    EtcdOptions etcd = EtcdFor();
    if (!endpoint.empty()) etcd.endpoints = {endpoint};
    auto source = NewEtcdMemberSource(etcd, kPrefix);
    EXPECT_TRUE(source.ok()) << source.status();
    return source.ok() ? *std::move(source) : nullptr;
  }

  int EtcdPort() const {
    const std::string& endpoint = etcd_->endpoint();
    return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  }

  // Compacts etcd's history up to its current revision; false when etcdctl failed.
  bool Compact() {
    auto range = client_->GetPrefix("/");
    if (!range.ok()) return false;
    SpawnOptions compact;
    compact.argv = {"etcdctl", "--endpoints=" + etcd_->endpoint(), "compact",
                    std::to_string(range->revision)};
    compact.env = {"ETCDCTL_API=3"};
    auto process = Subprocess::Spawn(compact);
    if (!process.ok()) return false;
    auto exit = (*process)->Wait(absl::Now() + absl::Seconds(30));
    return exit.ok() && exit->exited && exit->code == 0;
  }
};

using Ids = std::vector<std::string>;

TEST_F(EtcdMemberSourceTest, SeesJoinAndLeave) {
  auto a = Register("node-a");
  Sets sets;
  auto source = Source();
  ASSERT_TRUE(source->Start(sets.Listener(), absl::Seconds(10)).ok());
  EXPECT_EQ(sets.Count(), 1u);
  EXPECT_EQ(sets.Last(), Ids{"node-a"});
  EXPECT_EQ(source->Current()[0].grpc_address, "node-a:7070");

  auto b = Register("node-b");
  EXPECT_TRUE(WaitFor([&] { return sets.Last() == Ids({"node-a", "node-b"}); }));
  a->Stop();
  EXPECT_TRUE(WaitFor([&] { return sets.Last() == Ids{"node-b"}; }));
  EXPECT_TRUE(source->stats().connected);
  EXPECT_EQ(source->stats().updates, sets.Count());
}

TEST_F(EtcdMemberSourceTest, SkipsValuesThatDoNotParse) {
  ASSERT_TRUE(PutMember("node-a").ok());
  ASSERT_TRUE(client_->Put(MemberKey(kPrefix, "broken"), "{not json").ok());
  Sets sets;
  auto source = Source();
  ASSERT_TRUE(source->Start(sets.Listener(), absl::Seconds(10)).ok());
  EXPECT_EQ(sets.Last(), Ids{"node-a"});
  EXPECT_EQ(source->stats().errors, 1u);
  ASSERT_TRUE(client_->Put(MemberKey(kPrefix, "node-a"), "[]").ok());
  EXPECT_TRUE(WaitFor([&] { return sets.Last().empty(); }));
  EXPECT_EQ(source->stats().errors, 2u);
}

TEST_F(EtcdMemberSourceTest, SkipsAValueNamingAnotherId) {
  ASSERT_TRUE(PutMember("node-a").ok());
  Member alias;
  alias.id = "node-a";
  alias.grpc_address = "elsewhere:7070";
  ASSERT_TRUE(client_->Put(MemberKey(kPrefix, "alias"), MemberToJson(alias)).ok());
  Sets sets;
  auto source = Source();
  ASSERT_TRUE(source->Start(sets.Listener(), absl::Seconds(10)).ok());
  EXPECT_EQ(sets.Last(), Ids{"node-a"});
  ASSERT_EQ(source->Current().size(), 1u);
  EXPECT_EQ(source->Current()[0].grpc_address, "");
  EXPECT_EQ(source->stats().errors, 1u);
  EXPECT_NE(source->stats().last_error.find("alias"), std::string::npos)
      << source->stats().last_error;
}

TEST_F(EtcdMemberSourceTest, DropsAMemberWhoseKeyWentWhileCutOff) {
  ASSERT_TRUE(PutMember("node-a").ok());
  ASSERT_TRUE(PutMember("node-b").ok());
  TcpRelay relay(EtcdPort());
  ASSERT_FALSE(relay.endpoint().empty());
  Sets sets;
  auto source = Source(relay.endpoint());
  ASSERT_TRUE(source->Start(sets.Listener(), absl::Seconds(10)).ok());
  EXPECT_EQ(sets.Last(), Ids({"node-a", "node-b"}));
  relay.Cut();
  ASSERT_TRUE(client_->Delete(MemberKey(kPrefix, "node-b")).ok());
  ASSERT_TRUE(PutMember("node-c").ok());
  relay.Restore();
  EXPECT_TRUE(WaitFor([&] { return sets.Last() == Ids({"node-a", "node-c"}); }));
}

TEST_F(EtcdMemberSourceTest, ReadsAgainWhenItsRevisionWasCompacted) {
  ASSERT_TRUE(PutMember("node-a").ok());
  ASSERT_TRUE(PutMember("node-b").ok());
  TcpRelay relay(EtcdPort());
  ASSERT_FALSE(relay.endpoint().empty());
  Sets sets;
  auto source = Source(relay.endpoint());
  ASSERT_TRUE(source->Start(sets.Listener(), absl::Seconds(10)).ok());
  EXPECT_EQ(source->stats().lookups, 1u);
  relay.Cut();
  ASSERT_TRUE(client_->Delete(MemberKey(kPrefix, "node-b")).ok());
  ASSERT_TRUE(PutMember("node-c").ok());
  if (!Compact()) GTEST_SKIP() << "etcdctl compact failed";
  relay.Restore();
  // The watch cannot resume from a compacted revision: the source reads the range again.
  EXPECT_TRUE(WaitFor([&] { return sets.Last() == Ids({"node-a", "node-c"}); }));
  EXPECT_GE(source->stats().lookups, 2u);
  EXPECT_TRUE(WaitFor([&] { return source->stats().connected; }));
  // And watches on from the new read.
  ASSERT_TRUE(PutMember("node-d").ok());
  EXPECT_TRUE(WaitFor([&] { return sets.Last() == Ids({"node-a", "node-c", "node-d"}); }));
}

TEST_F(EtcdMemberSourceTest, KeepsTheLastSetWhileEtcdIsDownAndCatchesUp) {
  ASSERT_TRUE(PutMember("node-a").ok());
  Sets sets;
  auto source = Source();
  ASSERT_TRUE(source->Start(sets.Listener(), absl::Seconds(10)).ok());
  etcd_->Kill();
  EXPECT_TRUE(WaitFor([&] { return !source->stats().connected; }));
  EXPECT_GT(source->stats().errors, 0u);
  EXPECT_EQ(sets.Last(), Ids{"node-a"});
  ASSERT_EQ(source->Current().size(), 1u);

  ASSERT_TRUE(etcd_->Restart().ok());
  ASSERT_TRUE(WaitFor([&] { return PutMember("node-b").ok(); }));
  EXPECT_TRUE(WaitFor([&] { return sets.Last() == Ids({"node-a", "node-b"}); }));
  EXPECT_TRUE(WaitFor([&] { return source->stats().connected; }));
}

TEST_F(EtcdMemberSourceTest, StartFailsWhileEtcdIsDown) {
  etcd_->Kill();
  Sets sets;
  auto source = Source();
  absl::Status started = source->Start(sets.Listener(), absl::Milliseconds(500));
  EXPECT_TRUE(absl::IsUnavailable(started)) << started;
  EXPECT_EQ(sets.Count(), 0u);
  EXPECT_TRUE(absl::IsInvalidArgument(NewEtcdMemberSource(EtcdFor(), "no-slash").status()));
}

}  // namespace
}  // namespace kvstash::cluster
