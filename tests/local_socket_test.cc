// server.local_socket, gRPC over a Unix socket for clients on the daemon's host: the same
// store as the TCP listener, a path no second daemon can take over, a stale socket of a
// killed daemon replaced, the socket gone after shutdown, clear errors for a missing
// socket or TLS options, and (the point of it, as engine pods use it through a hostPath)
// a client in another network namespace that reaches the daemon only through the socket,
// and its arena through the local arena socket beside it.
// Round trips and authentication over it run in roundtrip_test.cc and auth_test.cc.
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/unix_socket.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "tests/daemon_process.h"
#include "tests/metrics_test_util.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

absl::StatusOr<std::unique_ptr<DaemonProcess>> StartWithSocket(const std::string& path = "") {
  DaemonOptions options;
  options.local_socket = path.empty();
  if (!path.empty()) options.set.push_back("server.local_socket=" + path);
  options.set.push_back("storage.dram.capacity_bytes=64MiB");
  return DaemonProcess::Start(options);
}

// Puts a 1 MiB pattern chunk under `key` through `uri`.
absl::Status PutPattern(const std::string& uri, const Key128& key) {
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectClient(uri);
  if (!client.ok()) return client.status();
  absl::StatusOr<NamespaceHandle> ns = (*client)->OpenNamespace(TestNamespace("local"));
  if (!ns.ok()) return ns.status();
  Payload p;
  p.key = key;
  p.bytes = PatternBytes(key, kMiB);
  return PutAll(**client, *ns, {p});
}

// Gets `key` through `uri` and checks the pattern.
void ExpectPattern(const std::string& uri, const Key128& key) {
  absl::StatusOr<std::unique_ptr<Client>> client = ConnectClient(uri);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<NamespaceHandle> ns = (*client)->OpenNamespace(TestNamespace("local"));
  ASSERT_TRUE(ns.ok()) << ns.status();
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(**client, *ns, key, kMiB, &buf, &item).ok());
  ASSERT_TRUE(item.status.ok()) << item.status;
  ASSERT_EQ(item.size, kMiB);
  EXPECT_EQ(FirstPatternMismatch(key, buf.data(), kMiB), -1);
}

// Puts a fresh chunk through `put_uri` and reads it back through `get_uri`.
void ExpectRoundTrip(const std::string& put_uri, const std::string& get_uri) {
  static std::mt19937_64 rng(std::random_device{}());
  const Key128 key = RandomKey(rng);
  ASSERT_TRUE(PutPattern(put_uri, key).ok());
  ExpectPattern(get_uri, key);
}

TEST(LocalSocketTest, ServesTheStoreOfTheTcpListener) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = StartWithSocket();
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string path = (*daemon)->dir() + "/kvstash.sock";
  EXPECT_EQ((*daemon)->ready().local, path);
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u) << "who connects is the directory's and auth's decision";
  ExpectRoundTrip((*daemon)->local_uri(), (*daemon)->uri());
  ExpectRoundTrip((*daemon)->uri(), (*daemon)->local_uri());
}

TEST(LocalSocketTest, ASecondDaemonCannotTakeTheSocketOver) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> first = StartWithSocket();
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string path = (*first)->ready().local;
  absl::StatusOr<std::unique_ptr<DaemonProcess>> second = StartWithSocket(path);
  ASSERT_FALSE(second.ok()) << "a second daemon started on " << path;
  EXPECT_TRUE(absl::StrContains(second.status().message(), "another process serves " + path))
      << second.status();
  ExpectRoundTrip((*first)->local_uri(), (*first)->local_uri());
}

TEST(LocalSocketTest, AKilledDaemonsSocketIsReplaced) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> first = StartWithSocket();
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string path = (*first)->ready().local;
  (*first)->Kill();
  ASSERT_TRUE(Exists(path)) << "SIGKILL leaves the socket file behind";
  absl::StatusOr<std::unique_ptr<DaemonProcess>> second = StartWithSocket(path);
  ASSERT_TRUE(second.ok()) << second.status();
  ExpectRoundTrip((*second)->local_uri(), (*second)->uri());
}

TEST(LocalSocketTest, ShutdownRemovesTheSocket) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = StartWithSocket();
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string path = (*daemon)->ready().local;
  ASSERT_TRUE(Exists(path));
  ASSERT_TRUE(Exists(ArenaSocketPath(path))) << "the local arena socket lies beside it";
  ASSERT_TRUE((*daemon)->Signal(SIGTERM).ok());
  absl::StatusOr<ExitInfo> exit = (*daemon)->WaitExit(absl::Seconds(30));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->exited && exit->code == 0) << exit->ToString();
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(ArenaSocketPath(path)));
}

TEST(LocalSocketTest, ConnectNamesAMissingSocket) {
  ClientOptions options;
  options.connect_timeout_ms = 1000;
  options.max_retries = 0;
  absl::StatusOr<std::unique_ptr<Client>> c =
      Client::Connect("unix:///nonexistent-dir/kvstash.sock", options);
  EXPECT_TRUE(absl::IsUnavailable(c.status())) << c.status();
  EXPECT_TRUE(absl::StrContains(c.status().message(), "no socket there")) << c.status();
}

TEST(LocalSocketTest, TlsOptionsAreRefused) {
  ClientOptions options;
  options.tls_ca_file = "/etc/kvstash/ca.crt";
  absl::StatusOr<std::unique_ptr<Client>> c =
      Client::Connect("unix:///run/kvstash/kvstash.sock", options);
  EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
  EXPECT_TRUE(absl::StrContains(c.status().message(), "unix:// has no TLS")) << c.status();
}

// unshare(1) with a network namespace of its own: directly where allowed (CAP_SYS_ADMIN),
// else inside a user namespace of its own; empty when neither works here.
std::vector<std::string> OwnNetwork() {
  for (std::vector<std::string> prefix :
       {std::vector<std::string>{"unshare", "--net", "--"},
        std::vector<std::string>{"unshare", "--user", "--map-root-user", "--net", "--"}}) {
    std::vector<std::string> argv = prefix;
    argv.push_back("true");
    absl::StatusOr<CommandResult> r = RunCommand(argv);
    if (r.ok() && r->exit.exited && r->exit.code == 0) return prefix;
  }
  return {};
}

// Runs the CLI with `args` after `prefix` (OwnNetwork()).
CommandResult CliIn(const std::vector<std::string>& prefix, const std::string& uri,
                    std::vector<std::string> args) {
  std::vector<std::string> argv = prefix;
  argv.insert(argv.end(), {KVSTASH_CLI_PATH, "--server", uri, "--connect-timeout-ms", "3000"});
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> r = RunCommand(argv, absl::Seconds(60));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : CommandResult();
}

TEST(LocalSocketTest, ReachesTheDaemonFromAnotherNetworkNamespace) {
  const std::vector<std::string> own = OwnNetwork();
  if (own.empty()) {
    GTEST_SKIP() << "cannot make a network namespace here (unshare --net needs CAP_SYS_ADMIN "
                    "or unprivileged user namespaces)";
  }
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = StartWithSocket();
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  // Loopback TCP is another network's there, as for an engine pod without host networking.
  const CommandResult tcp = CliIn(own, (*daemon)->uri(), {"health"});
  EXPECT_TRUE(tcp.exit.exited && tcp.exit.code == 1) << tcp.exit.ToString() << tcp.output;
  const std::string out = (*daemon)->dir() + "/chunk.bin";
  const CommandResult put =
      CliIn(own, (*daemon)->local_uri(),
            {"put", "--key", "00112233445566778899aabbccddeeff", "--size", "1MiB"});
  ASSERT_TRUE(put.exit.exited && put.exit.code == 0) << put.exit.ToString() << put.output;
  const CommandResult get =
      CliIn(own, (*daemon)->local_uri(),
            {"get", "--key", "00112233445566778899aabbccddeeff", "--out", out});
  ASSERT_TRUE(get.exit.exited && get.exit.code == 0) << get.exit.ToString() << get.output;
  EXPECT_EQ(ReadFileOrEmpty(out).size(), kMiB);
  // The arena's descriptor crossed too: the put wrote the daemon's arena, the get read it.
  for (const char* direction : {"in", "out"}) {
    absl::StatusOr<double> direct = MetricValue(
        **daemon, absl::StrCat("kvstash_transport_direct_bytes_total{transport=\"local\","
                               "direction=\"",
                               direction, "\"}"));
    ASSERT_TRUE(direct.ok()) << direct.status();
    EXPECT_EQ(*direct, kMiB) << direction;
  }
  // The CLI in this namespace reads the bytes the one in the other namespace wrote.
  const CommandResult here =
      RunCommand({KVSTASH_CLI_PATH, "--server", (*daemon)->uri(), "get", "--key",
                  "00112233445566778899aabbccddeeff", "--out", out + ".tcp"})
          .value_or(CommandResult());
  ASSERT_TRUE(here.exit.exited && here.exit.code == 0) << here.output;
  EXPECT_EQ(ReadFileOrEmpty(out + ".tcp"), ReadFileOrEmpty(out));
}

}  // namespace
}  // namespace kvstash::testing
