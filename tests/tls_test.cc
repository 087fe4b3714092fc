// gRPC over TLS and mutual TLS, and the /metrics bearer token, against a real kvstashd with
// certificates made at test time (tests/tls_certs.sh, Debian's openssl). Every refused
// client is followed by a good one, to show the daemon keeps serving.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/bearer_token.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "testing/http_get.h"
#include "tests/daemon_process.h"
#include "tests/metrics_test_util.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

// A path of this process's own (ctest runs each test as a process, in parallel).
std::string ScratchPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/kvstash-tls-", getpid(), "-", name);
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new std::string(ScratchPath("certs"));
    std::filesystem::remove_all(*certs_);
    absl::Status made = MakeTestCertificates(*certs_);
    ASSERT_TRUE(made.ok()) << made;
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*certs_);
    delete certs_;
  }

  static std::string Cert(const std::string& name) { return *certs_ + "/" + name; }

  // Starts kvstashd serving TLS with `cert`/`key` (files under the cert dir) plus `set`.
  void StartDaemon(const std::string& cert, const std::string& key,
                   std::vector<std::string> set = {}) {
    DaemonOptions options;
    options.set = {"storage.dram.capacity_bytes=64MiB", "ucx.enabled=false",
                   "server.tls.cert_file=" + cert, "server.tls.key_file=" + key};
    set.insert(set.begin(), options.set.begin(), options.set.end());
    options.set = set;
    auto daemon = DaemonProcess::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon);
  }

  // Client options trusting `ca` (a file under the cert dir), failing fast.
  static ClientOptions Trusting(const std::string& ca) {
    ClientOptions o;
    o.tls_ca_file = Cert(ca);
    o.connect_timeout_ms = 2000;
    o.max_retries = 0;
    return o;
  }

  absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options) {
    return Client::Connect(daemon_->uri(), options);
  }

  // A client with `options` connects, stores a chunk and reads it back.
  void ExpectRoundTrip(const ClientOptions& options, const std::string& uri = "") {
    auto client = Client::Connect(uri.empty() ? daemon_->uri() : uri, options);
    ASSERT_TRUE(client.ok()) << client.status();
    auto ns = (*client)->OpenNamespace(TestNamespace("tls-roundtrip"));
    ASSERT_TRUE(ns.ok()) << ns.status();
    std::mt19937_64 rng(7);
    std::vector<Key128> keys = PutFresh(**client, *ns, rng, 2, 256 << 10, 2);
    ASSERT_EQ(keys.size(), 2u);
    std::vector<uint8_t> out;
    GetItem item;
    ASSERT_TRUE(GetOne(**client, *ns, keys[1], 256 << 10, &out, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_EQ(FirstPatternMismatch(keys[1], out.data(), item.size), -1);
  }

  // A client with `options` is refused with `code` and a message containing `why`; then a
  // client trusting the right CA (with `good`) still round-trips.
  void ExpectRefused(const ClientOptions& options, const std::string& why,
                     const ClientOptions& good,
                     absl::StatusCode code = absl::StatusCode::kUnavailable) {
    auto client = Connect(options);
    ASSERT_FALSE(client.ok());
    EXPECT_EQ(client.status().code(), code) << client.status();
    EXPECT_TRUE(absl::StrContains(client.status().message(), why)) << client.status();
    ExpectRoundTrip(good);
  }

  static std::string* certs_;
  std::unique_ptr<DaemonProcess> daemon_;
};
std::string* TlsTest::certs_ = nullptr;

TEST_F(TlsTest, RoundTripOverTlsWithTheDaemonsCa) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(Cert("server.crt"), Cert("server.key")));
  ExpectRoundTrip(Trusting("ca.crt"));
  // grpcs:// turns TLS on by itself; the CA can come from the environment.
  ClientOptions from_env;
  setenv("KVSTASH_TLS_CA", Cert("ca.crt").c_str(), 1);
  ExpectRoundTrip(from_env, "grpcs://" + daemon_->address());
  unsetenv("KVSTASH_TLS_CA");
  // The certificate names localhost too; tls_server_name checks that name instead.
  ClientOptions by_name = Trusting("ca.crt");
  by_name.tls_server_name = "localhost";
  ExpectRoundTrip(by_name);
  by_name.tls_server_name = "elsewhere.example";
  ExpectRefused(by_name, "", Trusting("ca.crt"));
}

TEST_F(TlsTest, PlaintextClientAndWrongCaAreRefused) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(Cert("server.crt"), Cert("server.key")));
  ClientOptions plaintext = Trusting("ca.crt");
  plaintext.tls_ca_file.clear();
  // A plaintext client is told at once that the listener speaks TLS.
  ExpectRefused(plaintext, "is a TLS server, not kvstashd's gRPC listener", Trusting("ca.crt"),
                absl::StatusCode::kFailedPrecondition);
  ExpectRefused(Trusting("other_ca.crt"), "certificate verify failed", Trusting("ca.crt"));
}

TEST_F(TlsTest, ExpiredCertificateIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(Cert("expired.crt"), Cert("expired.key")));
  auto client = Connect(Trusting("ca.crt"));
  ASSERT_FALSE(client.ok());
  EXPECT_TRUE(absl::IsUnavailable(client.status())) << client.status();
  EXPECT_TRUE(absl::StrContains(client.status().message(), "certificate verify failed"))
      << client.status();
}

TEST_F(TlsTest, MutualTlsNeedsAClientCertificateTheCaSigned) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(Cert("server.crt"), Cert("server.key"),
                                      {"server.tls.client_ca_file=" + Cert("ca.crt")}));
  ClientOptions with_cert = Trusting("ca.crt");
  with_cert.tls_cert_file = Cert("client.crt");
  with_cert.tls_key_file = Cert("client.key");
  ExpectRoundTrip(with_cert);
  ExpectRefused(Trusting("ca.crt"), "not established", with_cert);
  ClientOptions foreign = Trusting("ca.crt");  // a certificate of another CA
  foreign.tls_cert_file = Cert("other_server.crt");
  foreign.tls_key_file = Cert("other_server.key");
  ExpectRefused(foreign, "not established", with_cert);
}

TEST_F(TlsTest, RenewedCertificateIsServedWithoutRestart) {
  const std::string dir = ScratchPath("rotate");
  std::filesystem::create_directories(dir);
  const std::string cert = dir + "/tls.crt", key = dir + "/tls.key";
  std::filesystem::copy_file(Cert("server.crt"), cert,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(Cert("server.key"), key,
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_NO_FATAL_FAILURE(StartDaemon(cert, key, {"server.tls.reload_interval_ms=1000"}));
  ExpectRoundTrip(Trusting("ca.crt"));
  const pid_t pid = daemon_->pid();
  // Renew by renaming the new pair into place, as cert-manager and certbot do.
  for (const auto& [from, to] :
       {std::pair{Cert("other_server.key"), key}, std::pair{Cert("other_server.crt"), cert}}) {
    std::filesystem::copy_file(from, to + ".new",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(to + ".new", to);
  }
  EXPECT_TRUE(PollUntil([&] { return Connect(Trusting("other_ca.crt")).ok(); }, absl::Seconds(60),
                        absl::Milliseconds(200)));
  ExpectRoundTrip(Trusting("other_ca.crt"));
  EXPECT_FALSE(Connect(Trusting("ca.crt")).ok());
  EXPECT_EQ(daemon_->pid(), pid);
  std::filesystem::remove_all(dir);
}

TEST_F(TlsTest, BadFilesFailTheStartOrTheConnect) {
  DaemonOptions options;
  options.set = {"ucx.enabled=false", "server.tls.cert_file=" + Cert("missing.crt"),
                 "server.tls.key_file=" + Cert("server.key")};
  auto missing = DaemonProcess::Start(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "server.tls.cert_file"))
      << missing.status();
  options.set = {"ucx.enabled=false", "server.tls.cert_file=" + Cert("server.crt"),
                 "server.tls.key_file=" + Cert("client.key")};
  auto mismatched = DaemonProcess::Start(options);
  ASSERT_FALSE(mismatched.ok());
  EXPECT_TRUE(absl::StrContains(mismatched.status().message(), "is not the key"))
      << mismatched.status();
  ClientOptions half = Trusting("ca.crt");
  half.tls_cert_file = Cert("client.crt");
  auto client = Client::Connect("grpc://127.0.0.1:1", half);
  EXPECT_TRUE(absl::IsInvalidArgument(client.status())) << client.status();
  EXPECT_TRUE(absl::StrContains(client.status().message(), "tls_cert_file")) << client.status();
  // A lone key turns TLS on too, and then lacks its certificate: never plaintext.
  ClientOptions lone_key;
  lone_key.tls_key_file = Cert("client.key");
  client = Client::Connect("grpc://127.0.0.1:1", lone_key);
  EXPECT_TRUE(absl::IsInvalidArgument(client.status())) << client.status();
  auto ucx = Client::Connect("ucx://127.0.0.1:1", Trusting("ca.crt"));
  EXPECT_TRUE(absl::IsInvalidArgument(ucx.status())) << ucx.status();
  EXPECT_TRUE(absl::StrContains(ucx.status().message(), "ucx:// has no TLS")) << ucx.status();
}

// deploy/kvstashd-hardened.yaml, its credential paths pointed at test files, serves
// mutual TLS to a client with a token, and a token-protected /metrics.
TEST_F(TlsTest, HardenedDeployConfigServes) {
  const std::string dir = ScratchPath("hardened");
  std::filesystem::create_directories(dir);
  for (const auto& [from, to] : {std::pair{"server.crt", "tls.crt"},
                                 {"server.key", "tls.key"},
                                 {"ca.crt", "client-ca.crt"}}) {
    std::filesystem::copy_file(Cert(from), dir + "/" + to,
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::ofstream(dir + "/metrics-token") << "scrape-token\n";
  const std::string token = NewToken();
  std::ofstream(dir + "/tokens") << "principals:\n  - name: engine\n    token_sha256: "
                                 << HashToken(token) << "\n    read: [\"*\"]\n    write: [\"*\"]\n";
  const std::string config = dir + "/kvstashd.yaml";
  std::ofstream(config) << absl::StrReplaceAll(
      ReadFile(std::string(KVSTASH_SOURCE_DIR) + "/deploy/kvstashd-hardened.yaml"),
      {{"/run/credentials/kvstashd.service/", dir + "/"}});
  DaemonOptions options;
  options.set = {"storage.dram.capacity_bytes=64MiB"};
  options.extra_args = {"--config", config};
  auto daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  daemon_ = std::move(*daemon);
  ClientOptions with_cert = Trusting("ca.crt");
  with_cert.tls_cert_file = Cert("client.crt");
  with_cert.tls_key_file = Cert("client.key");
  with_cert.token = token;
  ExpectRoundTrip(with_cert);
  auto address = MetricsAddress(*daemon_);
  ASSERT_TRUE(address.ok()) << address.status();
  auto metrics = HttpGet(*address, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->status, 401);
  std::filesystem::remove_all(dir);
}

TEST(MetricsTokenTest, MetricsNeedTheBearerTokenAndProbesDoNot) {
  const std::string token_file = ScratchPath("metrics-token");
  std::ofstream(token_file) << "kvs_metrics_scraper_token\n";
  DaemonOptions options;
  options.set = {"storage.dram.capacity_bytes=64MiB", "ucx.enabled=false",
                 "metrics.bearer_token_file=" + token_file};
  auto daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto address = MetricsAddress(**daemon);
  ASSERT_TRUE(address.ok()) << address.status();
  auto status_of = [&](const std::string& path, const std::string& headers) {
    absl::StatusOr<HttpResponse> r = HttpGet(*address, path, 5000, headers);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->status : 0;
  };
  EXPECT_EQ(status_of("/metrics", ""), 401);
  EXPECT_EQ(status_of("/metrics", "Authorization: Bearer wrong\r\n"), 401);
  EXPECT_EQ(status_of("/metrics", "Authorization: Bearer kvs_metrics_scraper_token\r\n"), 200);
  EXPECT_EQ(status_of("/healthz", ""), 200);
  EXPECT_EQ(status_of("/readyz", ""), 200);
  std::remove(token_file.c_str());
}

}  // namespace
}  // namespace kvstash::testing
