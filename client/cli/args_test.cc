#include "client/cli/args.h"

#include <gtest/gtest.h>

#include "client/cli/output.h"

namespace kvstash::cli {
namespace {

absl::StatusOr<CliArgs> Parse(std::vector<std::string> argv) { return ParseArgs(argv); }

TEST(ArgsTest, PutWithTokensAndSize) {
  auto a = Parse({"--server", "grpc://10.0.0.1:9000", "--model=llama", "--chunk-tokens", "16",
                  "put", "--tokens", "0-63", "--size", "2MiB", "--pattern-seed", "9"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, Command::kPut);
  EXPECT_EQ(a->server, "grpc://10.0.0.1:9000");
  EXPECT_EQ(a->ns.model_id, "llama");
  EXPECT_EQ(a->ns.chunk_tokens, 16u);
  EXPECT_EQ(a->tokens.size(), 64u);
  EXPECT_EQ(*a->size_bytes, 2u << 20);
  EXPECT_EQ(a->pattern_seed, 9u);
}

TEST(ArgsTest, DefaultsAndFlagsAfterCommand) {
  auto a = Parse({"get", "--key", std::string(32, 'a'), "--out", "/tmp/x"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->server, "grpc://127.0.0.1:7070");
  EXPECT_EQ(a->ns.model_id, "demo-model");
  EXPECT_EQ(a->ns.chunk_tokens, 256u);
  ASSERT_EQ(a->keys.size(), 1u);
  EXPECT_EQ(a->keys[0][0], 0xaa);
  EXPECT_EQ(a->out, "/tmp/x");
}

TEST(ArgsTest, ClusterTakesItsUriAsAWordOrFromServer) {
  auto a = Parse({"cluster", "etcd://127.0.0.1:2379/prod"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, Command::kCluster);
  EXPECT_EQ(a->server, "etcd://127.0.0.1:2379/prod");
  auto b = Parse({"--server", "static://10.0.0.1:7070,10.0.0.2:7070", "cluster"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->server, "static://10.0.0.1:7070,10.0.0.2:7070");
  // The word wins over --server, wherever the flag stands.
  auto c = Parse({"cluster", "dns://kvstashd:7070", "--server", "grpc://x:1"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "dns://kvstashd:7070");
  EXPECT_FALSE(Parse({"cluster", "etcd://a:1/x", "extra"}).ok());
  EXPECT_FALSE(Parse({"health", "etcd://a:1/x"}).ok());
  EXPECT_FALSE(Parse({"cluster", "--tokens", "0-15"}).ok());
}

TEST(ArgsTest, HelpWinsOverEverything) {
  auto a = Parse({"bogus", "--nope", "--help"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->help);
  EXPECT_NE(UsageText().find("lookup"), std::string::npos);
}

TEST(ArgsTest, UsageErrors) {
  const std::string key(32, 'b');
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"frobnicate"},
      {"health", "extra"},
      {"--unknown", "health"},
      {"health", "--size", "1"},  // flag of another command
      {"put", "--size", "10"},    // no key source
      {"put", "--key", key, "--tokens", "0-255", "--size", "1"},
      {"put", "--key", key},  // no payload source
      {"put", "--key", key, "--size", "1", "--file", "f"},
      {"put", "--key", key, "--size", "lots"},
      {"put", "--key", key, "--size", "1", "--all-chunks"},
      {"put", "--tokens", "0-99", "--size", "1"},  // less than one chunk
      {"get", "--key", "xyz"},
      {"get", "--key", key + "," + key},
      {"get", "--tokens"},  // missing value
      {"lookup"},
      {"lookup", "--tokens", "0-9", "--lease-ms", "-1"},
      {"stats", "--namespace=maybe"},
      {"health", "--"},
      {"--model", "", "stats"},           // invalid namespace
      {"--frame-bytes", "10", "health"},  // invalid client option
      {"put", "--key", key, "--size", "1", "--priority", "urgent"},
      {"put", "--key", key, "--size", "1", "--ttl-ms", "-5"},
      {"namespaces", "--model", "x"},  // lists every namespace
      {"clear", "--namespace-id", "abc"},
      {"pin"},  // no key source
      {"unpin", "--key", key, "--tokens", "0-255"},
      {"end-session"},  // no session
      {"end-session", "--session", "0"},
      {"get", "--key", key, "--session", "3"},
  };
  for (const auto& argv : bad) {
    auto a = Parse(argv);
    std::string joined;
    for (const auto& s : argv) joined += s + " ";
    EXPECT_TRUE(absl::IsInvalidArgument(a.status())) << joined;
  }
}

TEST(ArgsTest, FlagNamesWithDashesOrUnderscores) {
  auto a = Parse({"--deadline-ms", "5", "health", "--connect_timeout_ms=7"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->options.deadline_ms, 5);
  EXPECT_EQ(a->options.connect_timeout_ms, 7);
  a = Parse({"stats", "--namespace=false"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->namespace_stats);
  // Each parse starts from the defaults.
  a = Parse({"health"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->options.deadline_ms, ClientOptions().deadline_ms);
}

TEST(ArgsTest, TlsFlagsFillTheClientOptions) {
  auto a = Parse({"--tls-ca", "ca.crt", "--tls-cert=engine.crt", "--tls_key", "engine.key",
                  "--tls-server-name", "cache-1", "health"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->options.tls_ca_file, "ca.crt");
  EXPECT_EQ(a->options.tls_cert_file, "engine.crt");
  EXPECT_EQ(a->options.tls_key_file, "engine.key");
  EXPECT_EQ(a->options.tls_server_name, "cache-1");
}

TEST(ArgsTest, EtcdFlagsFillTheClusterOptions) {
  auto a = Parse({"cluster", "etcds://e1:2379/prod", "--etcd-ca", "etcd-ca.crt",
                  "--etcd-cert=me.crt", "--etcd_key", "me.key"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->options.cluster.etcd_ca_file, "etcd-ca.crt");
  EXPECT_EQ(a->options.cluster.etcd_cert_file, "me.crt");
  EXPECT_EQ(a->options.cluster.etcd_key_file, "me.key");
}

TEST(ArgsTest, SetFillsAnyClientOption) {
  auto a = Parse({"--set", "ucx_copy_threads=2", "--set=cluster.replicas=3", "health", "--set",
                  "ucx_tls=sm,self"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->options.ucx_copy_threads, 2);
  EXPECT_EQ(a->options.cluster.replicas, 3);
  EXPECT_EQ(a->options.ucx_tls, "sm,self");
  for (const char* bad :
       {"nope=1", "ucx_copy_threads", "=1", "ucx_direct=maybe", "ucx_copy_threads=99"}) {
    auto refused = Parse({"--set", bad, "health"});
    EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << bad;
  }
}

TEST(ArgsTest, ExistsTakesSeveralKeysOrAllChunks) {
  const std::string k1(32, '1'), k2(32, '2');
  auto a = Parse({"exists", "--key", k1 + "," + k2});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->keys.size(), 2u);
  a = Parse({"delete", "--tokens", "0-511", "--all-chunks"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->all_chunks);
}

TEST(ArgsTest, PutHintsAndAdminCommands) {
  auto a = Parse({"put", "--tokens", "0-511", "--all-chunks", "--size", "1", "--session", "42",
                  "--ttl-ms", "5000", "--priority", "high", "--pin"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->session_id, 42u);
  EXPECT_EQ(a->hints.ttl_ms, 5000u);
  EXPECT_EQ(a->hints.priority, Priority::kHigh);
  EXPECT_TRUE(a->hints.pin);
  a = Parse({"namespaces"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, Command::kNamespaces);
  a = Parse({"clear", "--namespace-id", std::string(32, 'c')});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, Command::kClear);
  ASSERT_TRUE(a->namespace_id.has_value());
  EXPECT_EQ((*a->namespace_id)[0], 0xcc);
  a = Parse({"--model", "m", "unpin", "--tokens", "0-511"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, Command::kUnpin);
  EXPECT_FALSE(a->namespace_id.has_value());
  a = Parse({"end-session", "--session", "9"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, Command::kEndSession);
  EXPECT_EQ(a->session_id, 9u);
}

TEST(OutputTest, LookupSummaryAndTiers) {
  EXPECT_EQ(LookupSummary(2, 4, 256, 1024), "hit 2/4 chunks (512 of 1024 tokens)");
  EXPECT_EQ(TierList({ChunkTier::kDram, ChunkTier::kNvme}), "dram nvme");
  EXPECT_EQ(TierList({}), "-");
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(3 << 19), "1.5 MiB");
}

TEST(OutputTest, PatternIsDeterministicAndSeeded) {
  EXPECT_EQ(PatternBytes(1, 1001), PatternBytes(1, 1001));
  EXPECT_NE(PatternBytes(1, 1001), PatternBytes(2, 1001));
  auto p = PatternBytes(5, 4096);
  EXPECT_NE(std::vector<uint8_t>(p.begin(), p.begin() + 8),
            std::vector<uint8_t>(p.begin() + 8, p.begin() + 16));
}

}  // namespace
}  // namespace kvstash::cli
