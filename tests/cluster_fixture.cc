#include "tests/cluster_fixture.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/etcd_client.h"
#include "tests/test_util.h"

namespace kvstash::testing {

namespace {

// The running test's name as a cluster name ([A-Za-z0-9._-], at most 64 characters), with
// the process id, so no two tests (or runs) ever share an etcd prefix.
std::string ClusterNameOfTest() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = absl::StrCat(info->test_suite_name(), ".", info->name());
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '-';
  }
  const std::string suffix = absl::StrCat("-", getpid());
  if (name.size() + suffix.size() > 64) name.resize(64 - suffix.size());
  return name + suffix;
}

// Port of "host:port"; 0 when there is none.
int PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? 0 : atoi(address.c_str() + colon + 1);
}

}  // namespace

absl::Duration ClusterFixture::settle_timeout() const {
  // Lease expiry plus watch delivery is seconds; the rest is headroom for slow builds.
  return absl::Seconds(options_.lease_ttl_s) + absl::Seconds(kUnderTsan ? 90 : 30);
}

std::string ClusterFixture::MemberId(int i) { return absl::StrCat("m", i); }

std::string ClusterFixture::uri() const {
  return absl::StrCat("etcd://", etcd_->endpoint(), "/", name_);
}

void ClusterFixture::StartCluster(const ClusterFixtureOptions& options) {
  options_ = options;
  name_ = ClusterNameOfTest();
  absl::StatusOr<std::unique_ptr<EtcdProcess>> etcd = EtcdProcess::Start({});
  if (absl::IsFailedPrecondition(etcd.status())) {
    GTEST_SKIP() << "etcd is not installed (scripts/setup.sh installs etcd-server): "
                 << etcd.status();
  }
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  etcd_ = *std::move(etcd);
  absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-cluster");
  ASSERT_TRUE(dir.ok()) << dir.status();
  dir_ = *std::move(dir);
  for (int i = 0; i < options_.members; ++i) {
    members_.push_back(MemberSlot{dir_->Sub(MemberId(i))});
    ASSERT_NO_FATAL_FAILURE(StartMember(i, 0));
  }
  ASSERT_TRUE(AwaitRegistered(LiveIds())) << "members did not all register";
}

int ClusterFixture::AddMember() {
  const int i = size();
  members_.push_back(MemberSlot{dir_->Sub(MemberId(i))});
  StartMember(i, 0);
  EXPECT_TRUE(AwaitRegistered(LiveIds())) << "member " << MemberId(i) << " did not register";
  return i;
}

void ClusterFixture::StartMember(int i, int64_t retry_start_ms) {
  MemberSlot& slot = members_[i];
  std::filesystem::create_directories(slot.data_dir);
  DaemonOptions options;
  options.retry_start_ms = retry_start_ms;
  options.log_tail_lines = 60;
  options.set = {"cluster.enabled=true", "cluster.name=" + name_,
                 "cluster.etcd_endpoints=" + etcd_->endpoint(), "cluster.member_id=" + MemberId(i),
                 absl::StrCat("cluster.lease_ttl_s=", options_.lease_ttl_s),
                 "data_dir=" + slot.data_dir, "storage.dram.capacity_bytes=64MiB",
                 "storage.dram.prefault=false", "storage.nvme.enabled=true",
                 "storage.nvme.capacity_bytes=256MiB",
                 // Every chunk reaches NVMe as it is put, so a member killed with -9 has
                 // them all back after its restart.
                 "storage.nvme.write_through=true", "ucx.enabled=true"};
  if (slot.grpc_port != 0) {
    options.listen = absl::StrCat("127.0.0.1:", slot.grpc_port);
    options.set.push_back(absl::StrCat("ucx.listen=127.0.0.1:", slot.ucx_port));
  }
  options.set.insert(options.set.end(), options_.set.begin(), options_.set.end());
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << MemberId(i) << ": " << daemon.status();
  slot.process = *std::move(daemon);
  slot.grpc_port = slot.process->port();
  slot.ucx_port = PortOf(slot.process->ucx_address());
  ASSERT_NE(slot.ucx_port, 0) << MemberId(i) << " reported no UCX listener";
}

void ClusterFixture::KillMember(int i) {
  MemberSlot& slot = members_[i];
  ASSERT_NE(slot.process, nullptr) << MemberId(i) << " is not running";
  slot.process->Kill();
  retired_.push_back(std::move(slot.process));
}

void ClusterFixture::RestartMember(int i) {
  if (members_[i].process != nullptr) {
    ASSERT_NO_FATAL_FAILURE(KillMember(i));
  }
  // The ports of a just-killed daemon may not be free at once.
  ASSERT_NO_FATAL_FAILURE(StartMember(i, 30000));
  EXPECT_TRUE(AwaitRegistered(LiveIds())) << MemberId(i) << " did not register again";
}

void ClusterFixture::RestartEtcd() {
  absl::Status restarted = etcd_->Restart();
  ASSERT_TRUE(restarted.ok()) << restarted;
}

void ClusterFixture::KillEtcd() { etcd_->Kill(); }

std::vector<std::string> ClusterFixture::LiveIds() const {
  std::vector<std::string> ids;
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].process != nullptr) ids.push_back(MemberId(static_cast<int>(i)));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

absl::StatusOr<std::vector<cluster::Member>> ClusterFixture::Registered() {
  absl::StatusOr<std::unique_ptr<cluster::EtcdClient>> etcd =
      cluster::EtcdClient::Create(etcd_->ClientOptions());
  if (!etcd.ok()) return etcd.status();
  absl::StatusOr<cluster::EtcdRange> range =
      (*etcd)->GetPrefix(cluster::MembersPrefix(cluster::ClusterPrefix(name_)));
  if (!range.ok()) return range.status();
  std::vector<cluster::Member> members;
  for (const cluster::EtcdKeyValue& kv : range->kvs) {
    absl::StatusOr<cluster::Member> member = cluster::MemberFromJson(kv.value);
    if (!member.ok()) return member.status();
    members.push_back(*std::move(member));
  }
  return cluster::SortedById(std::move(members));
}

bool ClusterFixture::AwaitRegistered(const std::vector<std::string>& ids) {
  std::string last;
  const bool done = PollUntil(
      [&] {
        absl::StatusOr<std::vector<cluster::Member>> members = Registered();
        if (!members.ok()) {
          last = members.status().ToString();
          return false;
        }
        std::vector<std::string> seen;
        for (const cluster::Member& m : *members) seen.push_back(m.id);
        last = absl::StrJoin(seen, ",");
        return seen == ids;
      },
      settle_timeout(), absl::Milliseconds(100));
  if (!done) {
    ADD_FAILURE() << "registered: [" << last << "], expected [" << absl::StrJoin(ids, ",") << "]";
  }
  return done;
}

absl::StatusOr<std::unique_ptr<Client>> ClusterFixture::ConnectCluster(ClientOptions options) {
  return ConnectClient(uri(), options);
}

absl::StatusOr<std::unique_ptr<Client>> ClusterFixture::ConnectMember(int i) {
  if (member(i) == nullptr) return absl::FailedPreconditionError(MemberId(i) + " is not running");
  return ConnectClient(member(i)->uri());
}

void ClusterFixture::TearDown() {
  // Members first, while etcd still runs, as a fleet shuts down.
  members_.clear();
  retired_.clear();
  if (etcd_ != nullptr && HasFailure()) {
    fprintf(stderr, "--- etcd log tail ---\n%s--- end of etcd log ---\n",
            etcd_->LogTail(30).c_str());
  }
  etcd_.reset();
}

}  // namespace kvstash::testing
