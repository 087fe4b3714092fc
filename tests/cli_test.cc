// The `kvstash` command-line tool and kvstashd's own command line, run as real processes:
// exit codes, what they print, and that the CLI and the client library agree on keys.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/bearer_token.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "server/auth/token_file.h"
#include "tests/daemon_fixture.h"
#include "tests/daemon_process.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

CommandResult RunTool(std::vector<std::string> argv, absl::Duration timeout = absl::Seconds(60)) {
  auto result = RunCommand(argv, kUnderAsan ? timeout * 2 : timeout);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : CommandResult();
}

// Runs kvstashd with `args`, expecting it to exit on its own without serving; a daemon
// that starts serving instead is killed after 20 s and the test fails.
CommandResult RunDaemon(std::vector<std::string> args) {
  args.insert(args.begin(), KVSTASHD_PATH);
  return RunTool(std::move(args), absl::Seconds(20));
}

class CliTest : public DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixtureOptions options;
    options.set = {"storage.dram.capacity_bytes=128MiB"};
    options.connect = false;  // the CLI is the client
    ASSERT_NO_FATAL_FAILURE(StartDaemon(options));
  }

  CommandResult Cli(std::vector<std::string> args) {
    args.insert(args.begin(), {KVSTASH_CLI_PATH, "--server", daemon_->uri()});
    return RunTool(std::move(args));
  }
};

#define EXPECT_EXIT_CODE(result, want)                                     \
  EXPECT_TRUE((result).exit.exited && (result).exit.code == (want))        \
      << (result).exit.ToString() << ", want exit code " << (want) << "\n" \
      << (result).output

TEST_F(CliTest, PutLookupGetStatsHealth) {
  const CommandResult put = Cli({"put", "--tokens", "0-511", "--size", "1MiB", "--all-chunks"});
  EXPECT_EXIT_CODE(put, 0);

  const CommandResult lookup = Cli({"lookup", "--tokens", "0-1023"});
  EXPECT_EXIT_CODE(lookup, 0);
  EXPECT_TRUE(absl::StrContains(lookup.output, "hit 2/4 chunks")) << lookup.output;

  const std::string out_path = daemon_->dir() + "/chunk.bin";
  const CommandResult get = Cli({"get", "--tokens", "0-511", "--out", out_path});
  EXPECT_EXIT_CODE(get, 0);
  const std::string fetched = ReadFileOrEmpty(out_path);
  EXPECT_EQ(fetched.size(), kMiB);

  // The library derives the same keys from the same tokens and sees the same bytes.
  Namespace cli_default;
  cli_default.model_id = "demo-model";
  std::vector<int32_t> tokens(512);
  for (int32_t i = 0; i < 512; ++i) tokens[i] = i;
  const std::vector<Key128> keys = KeyChain(cli_default).PrefixKeys(tokens);
  ASSERT_EQ(keys.size(), 2u);
  auto client = ConnectClient(daemon_->uri());
  ASSERT_TRUE(client.ok()) << client.status();
  auto ns = (*client)->OpenNamespace(cli_default);
  ASSERT_TRUE(ns.ok()) << ns.status();
  auto present = (*client)->Exists(*ns, keys);
  ASSERT_TRUE(present.ok()) << present.status();
  EXPECT_EQ(*present, std::vector<ChunkTier>(2, ChunkTier::kDram));
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(**client, *ns, keys[1], kMiB, &buf, &item).ok());
  ASSERT_TRUE(item.status.ok()) << item.status;
  EXPECT_TRUE(std::string(buf.begin(), buf.end()) == fetched) << "CLI get differs";

  const CommandResult stats = Cli({"stats"});
  EXPECT_EXIT_CODE(stats, 0);
  EXPECT_FALSE(stats.output.empty());
  const CommandResult health = Cli({"health"});
  EXPECT_EXIT_CODE(health, 0);
}

TEST_F(CliTest, NamespacesAndEndSession) {
  const CommandResult put = Cli({"put", "--tokens", "0-511", "--size", "4KiB", "--all-chunks",
                                 "--session", "5", "--ttl-ms", "1000", "--priority", "high"});
  EXPECT_EXIT_CODE(put, 0);
  Namespace cli_default;
  cli_default.model_id = "demo-model";
  const CommandResult list = Cli({"namespaces"});
  EXPECT_EXIT_CODE(list, 0);
  EXPECT_TRUE(absl::StartsWith(list.output, "namespace ")) << list.output;
  EXPECT_TRUE(
      absl::StrContains(list.output, KeyToHex(cli_default.Id()) + "  default      demo-model"))
      << list.output;
  EXPECT_TRUE(absl::StrContains(list.output, "\n1 namespace\n")) << list.output;
  const CommandResult end = Cli({"end-session", "--session", "5"});
  EXPECT_EXIT_CODE(end, 0);
  EXPECT_EQ(end.output,
            absl::StrCat("ended session 5 of namespace ", KeyToHex(cli_default.Id()), "\n"));
  // Admin commands naming a namespace nobody registered fail the call.
  const CommandResult unknown = Cli({"clear", "--namespace-id", std::string(32, '7')});
  EXPECT_EXIT_CODE(unknown, 1);
  EXPECT_TRUE(absl::StrContains(unknown.output, "FAILED_PRECONDITION")) << unknown.output;
}

TEST_F(CliTest, PinUnpinAndClearAPrefix) {
  EXPECT_EXIT_CODE(Cli({"put", "--tokens", "0-511", "--size", "4KiB", "--all-chunks"}), 0);
  const CommandResult pin = Cli({"pin", "--tokens", "0-767"});  // the third chunk is absent
  EXPECT_EXIT_CODE(pin, 0);
  EXPECT_EQ(pin.output, "pinned 2 of 3 chunks\n");
  const CommandResult list = Cli({"namespaces"});
  // DRAM chunks and bytes, then pinned bytes: no NVMe columns, as no tier below holds any.
  EXPECT_TRUE(absl::StrContains(list.output, "       2    8.0 KiB    8.0 KiB\n")) << list.output;
  const CommandResult unpin = Cli({"unpin", "--tokens", "0-511"});
  EXPECT_EXIT_CODE(unpin, 0);
  EXPECT_EQ(unpin.output, "unpinned 2 of 2 chunks\n");
  Namespace cli_default;
  cli_default.model_id = "demo-model";
  const CommandResult clear = Cli({"clear", "--namespace-id", KeyToHex(cli_default.Id())});
  EXPECT_EXIT_CODE(clear, 0);
  EXPECT_EQ(clear.output,
            absl::StrCat("cleared namespace ", KeyToHex(cli_default.Id()), ": deleted 2 chunks\n"));
  const CommandResult lookup = Cli({"lookup", "--tokens", "0-511"});
  EXPECT_TRUE(absl::StrContains(lookup.output, "hit 0/2 chunks")) << lookup.output;
}

TEST_F(CliTest, MissingChunkAndDeadDaemonExitOne) {
  const CommandResult get = Cli({"get", "--tokens", "0-255"});
  EXPECT_EXIT_CODE(get, 1);
  const int port = daemon_->port();
  daemon_->Kill();
  const CommandResult health =
      RunTool({KVSTASH_CLI_PATH, "--server", absl::StrCat("grpc://127.0.0.1:", port),
               "--connect-timeout-ms", "500", "health"});
  EXPECT_EXIT_CODE(health, 1);
}

TEST_F(CliTest, BadUsageExitsTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"frobnicate"},
      {},
      {"put"},
      {"lookup", "--tokens", "7-3"},
      {"put", "--tokens", "0-255", "--size", "lots"},
      {"get", "--key", "not-hex"},
  };
  for (const auto& args : bad) {
    const CommandResult result = Cli(args);
    EXPECT_EXIT_CODE(result, 2);
  }
}

TEST(DaemonCommandLineTest, BadConfigValueExitsTwoNamingTheField) {
  const CommandResult result = RunDaemon({"--set", "storage.dram.capacity_bytes=lots"});
  EXPECT_EXIT_CODE(result, 2);
  EXPECT_TRUE(absl::StrContains(result.output, "storage.dram.capacity_bytes")) << result.output;
}

// UCX itself would only warn (on stdout, seen at exit) and run on TCP alone.
TEST(DaemonCommandLineTest, UnavailableUcxTransportExitsTwoNamingIt) {
  const CommandResult result = RunDaemon({"--set", "ucx.tls=sm,bogus", "--listen", "127.0.0.1:0"});
  EXPECT_EXIT_CODE(result, 2);
  for (const char* part : {"ucx.tls", "bogus", "not available on this host"}) {
    EXPECT_TRUE(absl::StrContains(result.output, part)) << result.output;
  }
}

// The same through the environment, which UCX reads when the setting is empty: refused as
// the daemon sets UCX up, and still a bad configuration.
TEST(DaemonCommandLineTest, UnavailableUcxTransportFromTheEnvironmentExitsTwo) {
  const std::string dir = ::testing::TempDir() + "/kvstash-bad-ucx-tls";
  const CommandResult result =
      RunTool({"/usr/bin/env", "UCX_TLS=bogus", KVSTASHD_PATH, "--listen", "127.0.0.1:0", "--set",
               "data_dir=" + dir, "--set", "storage.dram.capacity_bytes=64MiB", "--set",
               "metrics.listen=127.0.0.1:0", "--set", "ucx.listen=127.0.0.1:0"},
              absl::Seconds(20));
  EXPECT_EXIT_CODE(result, 2);
  for (const char* part : {"UCX_TLS", "bogus", "not available on this host"}) {
    EXPECT_TRUE(absl::StrContains(result.output, part)) << result.output;
  }
}

TEST(DaemonCommandLineTest, BadFlagsAndFilesExitTwo) {
  const std::string dir = ::testing::TempDir();
  const std::string bad_yaml = dir + "/kvstash-bad.yaml";
  {
    FILE* f = fopen(bad_yaml.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("storage:\n  max_lease_ms: soon\n", f);
    fclose(f);
  }
  const std::vector<std::vector<std::string>> bad = {
      {"--no_such_flag"},
      {"--set", "storage.dram.no_such_key=1"},
      {"--set", "storage.dram.capacity_bytes"},
      {"--set", "storage.dram.capacity_bytes=0"},
      {"--config", dir + "/kvstash-does-not-exist.yaml"},
      {"--config", bad_yaml},
  };
  for (auto args : bad) {
    // Should a bad argument be ignored, the daemon must not grab a well-known port.
    args.insert(args.end(), {"--listen", "127.0.0.1:0"});
    const CommandResult result = RunDaemon(args);
    EXPECT_EXIT_CODE(result, 2);
  }
  const CommandResult from_file = RunDaemon({"--config", bad_yaml});
  EXPECT_TRUE(absl::StrContains(from_file.output, "storage.max_lease_ms")) << from_file.output;
}

TEST(DaemonCommandLineTest, PrintConfigShowsEffectiveYaml) {
  const CommandResult result = RunDaemon({"--set", "storage.dram.capacity_bytes=3GiB", "--listen",
                                          "127.0.0.1:4567", "--print_config"});
  EXPECT_EXIT_CODE(result, 0);
  YAML::Node config;
  try {
    config = YAML::Load(result.output);
  } catch (const YAML::Exception& e) {
    FAIL() << "not YAML: " << e.what() << "\n" << result.output;
  }
  ASSERT_TRUE(config["storage"]["dram"]["capacity_bytes"]) << result.output;
  const std::string capacity = config["storage"]["dram"]["capacity_bytes"].as<std::string>();
  EXPECT_TRUE(capacity == "3GiB" || capacity == "3221225472") << capacity;
  EXPECT_EQ(config["server"]["grpc_listen"].as<std::string>(""), "127.0.0.1:4567");
  EXPECT_TRUE(config["storage"]["max_chunk_bytes"]) << result.output;
  EXPECT_TRUE(config["data_dir"]) << result.output;
}

TEST(DaemonCommandLineTest, PortInUseFailsToStart) {
  auto first = DaemonProcess::Start({});
  ASSERT_TRUE(first.ok()) << first.status();
  const CommandResult second = RunDaemon({"--listen", (*first)->address()});
  EXPECT_FALSE(second.exit.exited && second.exit.code == 0) << second.output;
  EXPECT_TRUE((*first)->Running());
}

// `kvstash token new` prints a token and an entry the daemon's token file parser accepts,
// mapping that token to the principal asked for; `token hash` agrees with the entry.
TEST(TokenCommandLineTest, NewTokenEntryAdmitsTheToken) {
  const CommandResult made = RunTool({KVSTASH_CLI_PATH, "token", "new", "--name", "team-a",
                                      "--tenants", "team-a,shared", "--trusted"});
  EXPECT_EXIT_CODE(made, 0);
  std::string token;
  std::string entry;
  for (absl::string_view line : absl::StrSplit(made.output, '\n')) {
    if (absl::StartsWith(line, "kvs_")) token = std::string(line);
    if (absl::StartsWith(line, "  ")) absl::StrAppend(&entry, line, "\n");
  }
  ASSERT_FALSE(token.empty()) << made.output;
  auto table = server::auth::ParseTokenFile(absl::StrCat("principals:\n", entry));
  ASSERT_TRUE(table.ok()) << table.status() << "\n" << made.output;
  ASSERT_EQ(table->by_digest.count(HashToken(token)), 1u) << made.output;
  const server::auth::Principal& p = *table->by_digest.at(HashToken(token));
  EXPECT_EQ(p.name, "team-a");
  EXPECT_TRUE(p.May(server::auth::Access::kWrite, "shared"));
  EXPECT_FALSE(p.May(server::auth::Access::kAdmin, "team-a"));
  EXPECT_FALSE(p.May(server::auth::Access::kRead, "team-b"));
  EXPECT_TRUE(p.trusted);

  const CommandResult hashed =
      RunTool({"/bin/sh", "-c",
               absl::StrCat("printf '%s\\n' '", token, "' | ", KVSTASH_CLI_PATH, " token hash")});
  EXPECT_EXIT_CODE(hashed, 0);
  EXPECT_EQ(hashed.output, HashToken(token) + "\n");

  const CommandResult empty =
      RunTool({"/bin/sh", "-c", absl::StrCat(KVSTASH_CLI_PATH, " token hash < /dev/null")});
  EXPECT_EXIT_CODE(empty, 2);
  EXPECT_TRUE(absl::StrContains(empty.output, "no token on stdin")) << empty.output;
}

}  // namespace
}  // namespace kvstash::testing
