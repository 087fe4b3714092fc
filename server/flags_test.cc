#include "server/flags.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config_file.h"

namespace kvstash::server {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<CommandLine> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "kvstashd");
  return ParseCommandLine(static_cast<int>(args.size()), args.data());
}

TEST(FlagsTest, NoFlagsMeansEmbeddedDefaults) {
  absl::StatusOr<CommandLine> cl = Parse({});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_TRUE(cl->config_path.empty());
  EXPECT_TRUE(cl->overrides.empty());
  absl::StatusOr<ServerConfig> c = LoadConfig(*cl);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(EmitConfig(*c), EmitConfig(ServerConfig{}));
}

TEST(FlagsTest, ValuesAsNextArgumentOrAfterEquals) {
  absl::StatusOr<CommandLine> cl =
      Parse({"--config", "/etc/kv.yaml", "--ready_file=/tmp/r", "--set", "log.level=debug",
             "--set=storage.dram.capacity_bytes=2GiB", "--print_config"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->config_path, "/etc/kv.yaml");
  EXPECT_EQ(cl->ready_file, "/tmp/r");
  EXPECT_TRUE(cl->print_config);
  ASSERT_EQ(cl->overrides.size(), 2u);
  EXPECT_EQ(cl->overrides[0].key, "log.level");
  EXPECT_EQ(cl->overrides[0].value, "debug");
  EXPECT_EQ(cl->overrides[1].key, "storage.dram.capacity_bytes");
  EXPECT_EQ(cl->overrides[1].value, "2GiB");
}

TEST(FlagsTest, ListenWinsOverSetWhateverTheOrder) {
  absl::StatusOr<CommandLine> cl =
      Parse({"--listen", "127.0.0.1:0", "--set", "server.grpc_listen=10.0.0.1:1"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  absl::StatusOr<ServerConfig> c = LoadConfig(*cl);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server.grpc_listen, "127.0.0.1:0");
}

TEST(FlagsTest, ListenTakesIpv6Literally) {
  absl::StatusOr<CommandLine> cl = Parse({"--listen=[::1]:0"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  absl::StatusOr<ServerConfig> c = LoadConfig(*cl);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server.grpc_listen, "[::1]:0");
}

TEST(FlagsTest, UsageErrors) {
  EXPECT_THAT(std::string(Parse({"--bogus"}).status().message()), HasSubstr("--bogus"));
  EXPECT_THAT(std::string(Parse({"--config"}).status().message()), HasSubstr("needs a value"));
  EXPECT_THAT(std::string(Parse({"--set", "novalue"}).status().message()),
              HasSubstr("dotted.key=value"));
  EXPECT_THAT(std::string(Parse({"--set", "=x"}).status().message()),
              HasSubstr("dotted.key=value"));
  EXPECT_THAT(std::string(Parse({"stray"}).status().message()), HasSubstr("stray"));
  EXPECT_THAT(std::string(Parse({"--print_config=maybe"}).status().message()),
              HasSubstr("--print_config"));
  EXPECT_THAT(std::string(Parse({"--help=yes"}).status().message()), HasSubstr("takes no value"));
  EXPECT_FALSE(Parse({"--"}).ok());
}

TEST(FlagsTest, EachParseStartsFromTheDefaults) {
  ASSERT_TRUE(Parse({"--listen", "127.0.0.1:1", "--print_config"}).ok());
  absl::StatusOr<CommandLine> cl = Parse({});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->listen, "");
  EXPECT_FALSE(cl->print_config);
}

TEST(FlagsTest, DashesReadAsUnderscoresAndBoolsTakeAbslValues) {
  absl::StatusOr<CommandLine> cl = Parse({"--ready-file", "/tmp/r", "--print_config=false"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->ready_file, "/tmp/r");
  EXPECT_FALSE(cl->print_config);
}

TEST(FlagsTest, HelpAndVersion) {
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"-h"})->help);
  EXPECT_TRUE(Parse({"--version"})->version);
  EXPECT_THAT(Usage(), HasSubstr("--ready_file"));
}

TEST(FlagsTest, BadOverrideValueIsAConfigError) {
  absl::StatusOr<CommandLine> cl = Parse({"--set", "storage.dram.capacity_bytes=lots"});
  ASSERT_TRUE(cl.ok());
  absl::StatusOr<ServerConfig> c = LoadConfig(*cl);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "storage.dram.capacity_bytes: expected a byte size like 4GiB, got \"lots\"");
}

}  // namespace
}  // namespace kvstash::server
