// Helpers of the configuration tests: parse a config that must be accepted, or get the
// message of one that must be refused.
//
// Thread-safety: functions of their arguments (they report through gtest).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "server/config.h"
#include "server/config_file.h"

namespace kvstash::server {

// The config of `yaml` plus `overrides`; a failure fails the test and gives the defaults.
inline ServerConfig MustParse(absl::string_view yaml, std::vector<ConfigOverride> overrides = {}) {
  absl::StatusOr<ServerConfig> c = ParseConfig(yaml, overrides);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : ServerConfig{};
}

// The message of a config that must be refused with INVALID_ARGUMENT.
inline std::string ErrorOf(absl::string_view yaml, std::vector<ConfigOverride> overrides = {}) {
  absl::StatusOr<ServerConfig> c = ParseConfig(yaml, overrides);
  EXPECT_FALSE(c.ok()) << "accepted:\n" << yaml;
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

}  // namespace kvstash::server
