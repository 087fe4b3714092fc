// ucx_setup::CheckTransportNames and HostTransportNames: a transport list with a name UCX
// cannot use on this host is refused, naming it, before UCX quietly drops it.
#include "common/ucx_setup.h"

#include <stdlib.h>
#include <ucp/api/ucp.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "proto/ucx_wire.h"

namespace kvstash::ucx_setup {
namespace {

const std::vector<std::string> kShmAndTcp = {"cma", "mm", "posix", "self",
                                             "shm", "sm", "sysv",  "tcp"};

TEST(CheckTransportNamesTest, AvailableNamesAndUncheckableListsPass) {
  for (const char* tls : {"tcp", "sm,self", "tcp,sm,self", "posix,tcp:aux", "", "all", "all,bogus",
                          "^sm", "^bogus"}) {
    EXPECT_TRUE(CheckTransportNames(tls, kShmAndTcp).ok()) << tls;
  }
  EXPECT_TRUE(CheckTransportNames("bogus", {}).ok()) << "no names known: nothing to check";
}

TEST(CheckTransportNamesTest, UnavailableNamesAreRefusedNamingEach) {
  const absl::Status one = CheckTransportNames("bogus", kShmAndTcp);
  EXPECT_EQ(one.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(one.message(),
            "\"bogus\" not available on this host (available: cma, mm, posix, self, shm, sm, "
            "sysv, tcp)");
  const absl::Status two = CheckTransportNames("sm,rc,self,tpc", kShmAndTcp);
  EXPECT_EQ(two.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(two.message(), "\"rc\", \"tpc\" not available")) << two;
}

TEST(HostTransportNamesTest, ListsThisHostsTransportsSorted) {
  const std::vector<std::string>& names = HostTransportNames();
  ASSERT_FALSE(names.empty());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_TRUE(std::adjacent_find(names.begin(), names.end()) == names.end());
  for (const char* always : {"tcp", "self"}) {
    EXPECT_TRUE(std::binary_search(names.begin(), names.end(), always)) << always;
  }
  // An alias is listed only with a member: sm stands for posix, sysv, cma, ...
  const bool posix = std::binary_search(names.begin(), names.end(), "posix");
  EXPECT_TRUE(!posix || std::binary_search(names.begin(), names.end(), "sm"));
  EXPECT_FALSE(std::binary_search(names.begin(), names.end(), "bogus"));
}

// ConfigureUcx refuses the list (configured, else UCX_TLS) before UCX sees it.
TEST(HostTransportNamesTest, ConfigureUcxRefusesAnUnavailableTransport) {
  ucp_config_t* config = nullptr;
  ASSERT_EQ(ucp_config_read(nullptr, nullptr, &config), UCS_OK);
  unsetenv("UCX_TLS");
  const absl::StatusOr<uint64_t> configured =
      ConfigureUcx("sm,bogus", kDefaultTcpSegmentBytes, config);
  EXPECT_EQ(configured.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(configured.status().message(),
                                "UCX transports \"sm,bogus\": \"bogus\" not available"))
      << configured.status();
  setenv("UCX_TLS", "bogus", 1);
  const absl::StatusOr<uint64_t> from_env = ConfigureUcx("", kDefaultTcpSegmentBytes, config);
  unsetenv("UCX_TLS");
  EXPECT_TRUE(absl::StrContains(from_env.status().message(), "UCX_TLS \"bogus\": \"bogus\""))
      << from_env.status();
  EXPECT_TRUE(ConfigureUcx("tcp", kDefaultTcpSegmentBytes, config).ok());
  ucp_config_release(config);
}

}  // namespace
}  // namespace kvstash::ucx_setup
