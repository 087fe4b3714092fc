// The member a daemon registers (SelfMember): defaults derived from what it bound, and the
// configured values winning over them.
#include "server/cluster_member.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvstash::server {
namespace {

using ::testing::HasSubstr;

TEST(ClusterMemberTest, WildcardHostsBecomeTheHostName) {
  EXPECT_EQ(AdvertisedAddress("0.0.0.0:7070", "node1"), "node1:7070");
  EXPECT_EQ(AdvertisedAddress("[::]:7070", "node1"), "node1:7070");
  EXPECT_EQ(AdvertisedAddress("::7070", "node1"), "::7070");  // not HOST:PORT of a wildcard
  EXPECT_EQ(AdvertisedAddress(":7070", "node1"), "node1:7070");
  EXPECT_EQ(AdvertisedAddress("10.0.0.5:7070", "node1"), "10.0.0.5:7070");
  EXPECT_EQ(AdvertisedAddress("127.0.0.1:7070", "node1"), "127.0.0.1:7070");
}

TEST(ClusterMemberTest, DefaultsComeFromTheBoundListeners) {
  ServerConfig config;
  config.cluster.zone = "rack-2";
  config.storage.dram.capacity_bytes = 2ull << 30;
  config.storage.nvme.capacity_bytes = 64ull << 30;
  const BoundListeners bound{"0.0.0.0:0", 41234, "0.0.0.0:41235"};
  absl::StatusOr<cluster::Member> m =
      SelfMember(config, bound, "host-a", absl::FromUnixMillis(1700000000123));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->id, "host-a-41234");
  EXPECT_EQ(m->grpc_address, "host-a:41234");
  EXPECT_EQ(m->ucx_address, "host-a:41235");
  EXPECT_EQ(m->zone, "rack-2");
  EXPECT_EQ(m->tiers,
            (std::vector<cluster::TierCapacity>{{"dram", 2ull << 30}, {"nvme", 64ull << 30}}));
  EXPECT_EQ(m->started_unix_ms, 1700000000123);
}

TEST(ClusterMemberTest, ConfiguredValuesWin) {
  ServerConfig config;
  config.cluster.member_id = "worker-3";
  config.cluster.advertise_grpc = "10.0.0.3:7070";
  config.cluster.advertise_ucx = "10.0.0.3:7072";
  config.storage.nvme.enabled = false;
  absl::StatusOr<cluster::Member> m =
      SelfMember(config, {"127.0.0.1:7070", 7070, "127.0.0.1:7072"}, "h", absl::Now());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->id, "worker-3");
  EXPECT_EQ(m->grpc_address, "10.0.0.3:7070");
  EXPECT_EQ(m->ucx_address, "10.0.0.3:7072");
  EXPECT_EQ(m->tiers.size(), 1u);  // DRAM only
}

TEST(ClusterMemberTest, NoUcxAddressWithoutUcx) {
  ServerConfig config;
  config.cluster.advertise_ucx = "10.0.0.3:7072";
  absl::StatusOr<cluster::Member> m =
      SelfMember(config, {"127.0.0.1:0", 7070, ""}, "h", absl::Now());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->grpc_address, "127.0.0.1:7070");
  EXPECT_EQ(m->ucx_address, "");
}

TEST(ClusterMemberTest, UnixSocketNeedsAnAdvertisedAddress) {
  ServerConfig config;
  absl::StatusOr<cluster::Member> m =
      SelfMember(config, {"unix:/run/kvstash.sock", 1, ""}, "h", absl::Now());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("cluster.advertise_grpc"));
  config.cluster.advertise_grpc = "10.0.0.3:7070";
  config.cluster.member_id = "m1";
  EXPECT_TRUE(SelfMember(config, {"unix:/run/kvstash.sock", 1, ""}, "h", absl::Now()).ok());
}

TEST(ClusterMemberTest, AHostNameThatIsNoMemberIdAsksForOne) {
  absl::StatusOr<cluster::Member> m =
      SelfMember(ServerConfig(), {"127.0.0.1:0", 7070, ""}, "bad host", absl::Now());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("set cluster.member_id"));
}

}  // namespace
}  // namespace kvstash::server
