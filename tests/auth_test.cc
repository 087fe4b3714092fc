// Authentication and per-tenant authorization against a real kvstashd, over every
// transport: calls without a token, with a wrong or revoked token, a principal of one
// tenant reaching another's chunks, namespaces and admin calls, Stats and ListNamespaces
// filtered by rights, per-principal call limits, and direct access only for trusted
// principals. After every refusal the daemon still serves a good client.
#include <grpcpp/client_context.h>
#include <signal.h>
#include <stdlib.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/bearer_token.h"
#include "common/temp_dir.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "proto/ucx_wire.h"
#include "tests/daemon_fixture.h"
#include "tests/metrics_test_util.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"
#include "tests/ucx_raw_client.h"

namespace kvstash::testing {
namespace {

constexpr char kOpsToken[] = "kvs_ops-token";
constexpr char kAliceToken[] = "kvs_alice-token";
constexpr char kBobToken[] = "kvs_bob-token";
constexpr char kLimitedToken[] = "kvs_limited-token";
constexpr char kSingleToken[] = "kvs_single-token";

// One principal of the token file.
struct Entry {
  std::string name;
  std::string token;
  std::string rights;  // YAML lines after name and token_sha256, each indented 4
};

// The file every test starts from: ops may do anything (and map the arena), alice
// administers team-a, bob reads and writes team-b only, `limited` may start one call a
// second, `single` may have one call at a time; callers without a token (auth.required
// off) may read tenant `public`.
std::vector<Entry> DefaultEntries() {
  return {{"ops", kOpsToken,
           "    read: ['*']\n    write: ['*']\n    admin: ['*']\n"
           "    trusted: true\n"},
          {"alice", kAliceToken, "    read: [team-a]\n    write: [team-a]\n    admin: [team-a]\n"},
          {"bob", kBobToken, "    read: [team-b]\n    write: [team-b]\n"},
          {"limited", kLimitedToken,
           "    read: [team-c]\n    write: [team-c]\n"
           "    calls_per_s: 1\n"},
          {"single", kSingleToken,
           "    read: [integration]\n    write: [integration]\n    admin: [integration]\n"
           "    max_concurrent_calls: 1\n"}};
}

std::string TokenFileText(const std::vector<Entry>& entries) {
  std::string text = "principals:\n";
  for (const Entry& e : entries) {
    absl::StrAppend(&text, "  - name: ", e.name, "\n    token_sha256: ", HashToken(e.token), "\n",
                    e.rights);
  }
  absl::StrAppend(&text, "anonymous:\n  read: [public]\n");
  return text;
}

Namespace TenantNamespace(const std::string& tenant, const std::string& model) {
  Namespace spec = TestNamespace(model);
  spec.tenant = tenant;
  return spec;
}

bool IsCode(const absl::Status& s, absl::StatusCode code) { return s.code() == code; }

class AuthTest : public TransportFixture {
 protected:
  void SetUp() override {
    unsetenv(kTokenEnvVar);  // only the options' tokens count here
    absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-auth");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::move(*dir);
    token_file_ = dir_->path() + "/tokens.yaml";
  }

  // Writes the token file atomically (a reload never sees half of it).
  void WriteTokens(const std::vector<Entry>& entries) {
    const std::string tmp = token_file_ + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << TokenFileText(entries);
    }
    ASSERT_EQ(std::rename(tmp.c_str(), token_file_.c_str()), 0);
  }

  // Starts the daemon with the default token file; `required` refuses calls without one.
  void StartWithAuth(bool required, int64_t reload_interval_ms = 0) {
    ASSERT_NO_FATAL_FAILURE(WriteTokens(DefaultEntries()));
    DaemonFixtureOptions o;
    o.transport = GetParam();
    o.set = DaemonSettingsFor(GetParam());
    o.set.push_back("storage.dram.capacity_bytes=256MiB");
    o.set.push_back("auth.token_file=" + token_file_);
    o.set.push_back(absl::StrCat("auth.required=", required ? "true" : "false"));
    o.set.push_back(absl::StrCat("auth.reload_interval_ms=", reload_interval_ms));
    o.set.insert(o.set.end(), extra_set_.begin(), extra_set_.end());
    o.client.token = kOpsToken;
    o.spec = TenantNamespace("team-a", "ops-ns");
    ASSERT_NO_FATAL_FAILURE(StartDaemon(o));
  }

  // A client presenting `token` ("" for none), or the status Connect refused it with.
  absl::StatusOr<std::unique_ptr<Client>> ConnectWith(const std::string& token) {
    ClientOptions options;
    options.token = token;
    options.max_retries = 0;
    return ConnectOver(*daemon_, transport(), options);
  }
  std::unique_ptr<Client> MustConnect(const std::string& token) {
    absl::StatusOr<std::unique_ptr<Client>> c = ConnectWith(token);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // The status of `token`'s first call that needs a principal: Connect's, when the
  // transport authenticates there (UCX's Hello), else OpenNamespace's.
  absl::Status FirstCallStatus(const std::string& token, const Namespace& spec) {
    absl::StatusOr<std::unique_ptr<Client>> c = ConnectWith(token);
    if (!c.ok()) return c.status();
    return (*c)->OpenNamespace(spec).status();
  }

  // The status of a one-chunk Put: the call's, or the chunk's when the call succeeded.
  absl::Status PutOne(Client& client, NamespaceHandle ns, const Key128& key, size_t size = 4096) {
    Payload p;
    p.key = key;
    p.bytes = PatternBytes(key, size);
    p.tokens = 16;
    return PutAll(client, ns, {p});
  }
  absl::Status GetStatus(Client& client, NamespaceHandle ns, const Key128& key) {
    std::vector<uint8_t> buf;
    GetItem item;
    absl::Status s = GetOne(client, ns, key, 1 << 20, &buf, &item);
    return s.ok() ? item.status : s;
  }

  // The daemon still serves a good client: ops reads what it stored.
  void ExpectStillServing() {
    std::unique_ptr<Client> ops = MustConnect(kOpsToken);
    ASSERT_NE(ops, nullptr);
    const Key128 key = RandomKey(rng_);
    EXPECT_TRUE(PutOne(*ops, ns_, key).ok());
    EXPECT_TRUE(GetStatus(*ops, ns_, key).ok());
    EXPECT_TRUE(ops->Stats().ok());
  }

  // The value of the exposition line starting with `series` (labels included), or -1.
  double Metric(const std::string& series) {
    absl::StatusOr<std::string> address = MetricsAddress(*daemon_);
    EXPECT_TRUE(address.ok()) << address.status();
    absl::StatusOr<std::string> text = Scrape(address.ok() ? *address : "");
    EXPECT_TRUE(text.ok()) << text.status();
    const std::string line = series + " ";
    const size_t at = text.ok() ? text->find(line) : std::string::npos;
    return at == std::string::npos ? -1 : std::stod(text->substr(at + line.size()));
  }

  std::string TransportLabel() const { return transport() == Transport::kGrpc ? "grpc" : "ucx"; }

  std::unique_ptr<TempDir> dir_;
  std::string token_file_;
  std::vector<std::string> extra_set_;  // further --set lines for StartWithAuth
  std::mt19937_64 rng_{27};
};

TEST_P(AuthTest, NoTokenIsRefusedWhenRequired) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  const absl::Status s = FirstCallStatus("", TenantNamespace("team-a", "x"));
  EXPECT_TRUE(IsCode(s, absl::StatusCode::kUnauthenticated)) << s;
  EXPECT_GE(Metric(absl::StrCat("kvstash_auth_failures_total{transport=\"", TransportLabel(),
                                "\",reason=\"unauthenticated\"}")),
            1);
  ExpectStillServing();
}

TEST_P(AuthTest, NoTokenGetsTheAnonymousRightsWhenNotRequired) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/false));
  std::unique_ptr<Client> anon = MustConnect("");
  ASSERT_NE(anon, nullptr);
  // Anonymous may read tenant `public` (and register nothing: registering needs write).
  const absl::Status reg = anon->OpenNamespace(TenantNamespace("public", "p")).status();
  EXPECT_TRUE(IsCode(reg, absl::StatusCode::kPermissionDenied)) << reg;
  std::unique_ptr<Client> ops = MustConnect(kOpsToken);
  ASSERT_NE(ops, nullptr);
  absl::StatusOr<NamespaceHandle> pub = ops->OpenNamespace(TenantNamespace("public", "p"));
  ASSERT_TRUE(pub.ok()) << pub.status();
  const Key128 key = RandomKey(rng_);
  ASSERT_TRUE(PutOne(*ops, *pub, key).ok());
  EXPECT_TRUE(GetStatus(*anon, *pub, key).ok());
  EXPECT_TRUE(IsCode(PutOne(*anon, *pub, RandomKey(rng_)), absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(IsCode(GetStatus(*anon, ns_, key), absl::StatusCode::kPermissionDenied));
  ExpectStillServing();
}

TEST_P(AuthTest, WrongTokenIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/false));
  const absl::Status s = FirstCallStatus("kvs_not-a-token", TenantNamespace("team-a", "x"));
  EXPECT_TRUE(IsCode(s, absl::StatusCode::kUnauthenticated)) << s;
  EXPECT_EQ(s.message().find("kvs_not-a-token"), std::string::npos) << "token echoed: " << s;
  ExpectStillServing();
}

TEST_P(AuthTest, TenantBoundariesHoldForData) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  std::unique_ptr<Client> alice = MustConnect(kAliceToken);
  std::unique_ptr<Client> bob = MustConnect(kBobToken);
  ASSERT_TRUE(alice != nullptr && bob != nullptr);
  absl::StatusOr<NamespaceHandle> a = alice->OpenNamespace(TenantNamespace("team-a", "a"));
  ASSERT_TRUE(a.ok()) << a.status();
  const Key128 key = RandomKey(rng_);
  ASSERT_TRUE(PutOne(*alice, *a, key).ok());

  // Bob cannot register a namespace of team-a, nor read, write or delete its chunks.
  const absl::Status reg = bob->OpenNamespace(TenantNamespace("team-a", "a")).status();
  EXPECT_TRUE(IsCode(reg, absl::StatusCode::kPermissionDenied)) << reg;
  EXPECT_NE(reg.message().find("bob"), std::string::npos) << reg;
  EXPECT_NE(reg.message().find("team-a"), std::string::npos) << reg;
  EXPECT_TRUE(IsCode(GetStatus(*bob, *a, key), absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(IsCode(PutOne(*bob, *a, RandomKey(rng_)), absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(IsCode(bob->Delete(*a, {key}).status(), absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(IsCode(bob->Exists(*a, {key}).status(), absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(IsCode(bob->Lookup(*a, {key}).status(), absl::StatusCode::kPermissionDenied));
  // Alice's chunk is untouched, and bob works in his own tenant.
  EXPECT_TRUE(GetStatus(*alice, *a, key).ok());
  absl::StatusOr<NamespaceHandle> b = bob->OpenNamespace(TenantNamespace("team-b", "b"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(PutOne(*bob, *b, RandomKey(rng_)).ok());
  EXPECT_GE(Metric(absl::StrCat("kvstash_auth_failures_total{transport=\"", TransportLabel(),
                                "\",reason=\"permission_denied\"}")),
            6);
  ExpectStillServing();
}

TEST_P(AuthTest, AdminCallsNeedTheAdminRight) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  std::unique_ptr<Client> alice = MustConnect(kAliceToken);
  std::unique_ptr<Client> bob = MustConnect(kBobToken);
  ASSERT_TRUE(alice != nullptr && bob != nullptr);
  absl::StatusOr<NamespaceHandle> b = bob->OpenNamespace(TenantNamespace("team-b", "b"));
  ASSERT_TRUE(b.ok()) << b.status();
  const Key128 key = RandomKey(rng_);
  ASSERT_TRUE(PutOne(*bob, *b, key).ok());
  // Bob writes team-b but does not administer it.
  EXPECT_TRUE(IsCode(bob->ClearNamespace(*b).status(), absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(IsCode(bob->Pin(*b, {key}).status(), absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(IsCode(bob->EndSession(*b, 7), absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(GetStatus(*bob, *b, key).ok()) << "a refused ClearNamespace removed nothing";
  // Alice administers team-a, not team-b.
  EXPECT_TRUE(IsCode(alice->ClearNamespace(*b).status(), absl::StatusCode::kPermissionDenied));
  absl::StatusOr<NamespaceHandle> a = alice->OpenNamespace(TenantNamespace("team-a", "a"));
  ASSERT_TRUE(a.ok()) << a.status();
  const Key128 mine = RandomKey(rng_);
  ASSERT_TRUE(PutOne(*alice, *a, mine).ok());
  EXPECT_TRUE(alice->Pin(*a, {mine}).ok());
  EXPECT_TRUE(alice->EndSession(*a, 7).ok());
  absl::StatusOr<uint64_t> cleared = alice->ClearNamespace(*a);
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  EXPECT_EQ(*cleared, 1u);
  ExpectStillServing();
}

TEST_P(AuthTest, StatsAndListNamespacesShowOnlyWhatTheCallerMayRead) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  std::unique_ptr<Client> alice = MustConnect(kAliceToken);
  std::unique_ptr<Client> bob = MustConnect(kBobToken);
  ASSERT_TRUE(alice != nullptr && bob != nullptr);
  ASSERT_TRUE(bob->OpenNamespace(TenantNamespace("team-b", "b")).ok());
  // Store-wide counters need read on every tenant.
  const absl::Status stats = alice->Stats().status();
  EXPECT_TRUE(IsCode(stats, absl::StatusCode::kPermissionDenied)) << stats;
  EXPECT_TRUE(client_->Stats().ok());
  absl::StatusOr<std::vector<NamespaceUsage>> mine = alice->ListNamespaces();
  ASSERT_TRUE(mine.ok()) << mine.status();
  ASSERT_FALSE(mine->empty());  // the fixture's team-a namespace
  for (const NamespaceUsage& u : *mine) EXPECT_EQ(u.tenant, "team-a");
  absl::StatusOr<std::vector<NamespaceUsage>> all = client_->ListNamespaces();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), mine->size() + 1);  // and bob's
  ExpectStillServing();
}

TEST_P(AuthTest, RevokedTokenLosesAccessOnSighup) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true, /*reload_interval_ms=*/0));
  std::unique_ptr<Client> alice = MustConnect(kAliceToken);
  ASSERT_NE(alice, nullptr);
  absl::StatusOr<NamespaceHandle> a = alice->OpenNamespace(TenantNamespace("team-a", "a"));
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<Entry> without_alice = DefaultEntries();
  without_alice.erase(without_alice.begin() + 1);
  ASSERT_NO_FATAL_FAILURE(WriteTokens(without_alice));
  // No polling: the file changed but alice still works until the daemon is told.
  EXPECT_TRUE(alice->Exists(*a, {RandomKey(rng_)}).ok());
  ASSERT_TRUE(daemon_->Signal(SIGHUP).ok());
  // The reload runs on the daemon's signal thread: wait (bounded) for it to apply.
  EXPECT_TRUE(PollUntil(
      [&] {
        return IsCode(alice->Exists(*a, {RandomKey(rng_)}).status(),
                      absl::StatusCode::kUnauthenticated);
      },
      absl::Seconds(20)));
  EXPECT_TRUE(daemon_->Running()) << "SIGHUP must not stop the daemon";
  EXPECT_GE(Metric("kvstash_auth_reloads_total{result=\"ok\"}"), 1);
  ExpectStillServing();
}

TEST_P(AuthTest, RevokedTokenLosesAccessWhenTheFileChanges) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true, /*reload_interval_ms=*/50));
  std::unique_ptr<Client> bob = MustConnect(kBobToken);
  ASSERT_NE(bob, nullptr);
  absl::StatusOr<NamespaceHandle> b = bob->OpenNamespace(TenantNamespace("team-b", "b"));
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<Entry> without_bob = DefaultEntries();
  without_bob.erase(without_bob.begin() + 2);
  ASSERT_NO_FATAL_FAILURE(WriteTokens(without_bob));
  EXPECT_TRUE(PollUntil(
      [&] {
        return IsCode(bob->Exists(*b, {RandomKey(rng_)}).status(),
                      absl::StatusCode::kUnauthenticated);
      },
      absl::Seconds(20)));
  ExpectStillServing();
}

TEST_P(AuthTest, CallRateLimitRefusesOnlyThatPrincipal) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  std::unique_ptr<Client> limited = MustConnect(kLimitedToken);
  ASSERT_NE(limited, nullptr);
  // One call a second, a burst of one: of three calls back to back at least one is refused.
  int refused = 0;
  for (int i = 0; i < 3; ++i) {
    const absl::Status s = limited->OpenNamespace(TenantNamespace("team-c", "c")).status();
    EXPECT_TRUE(s.ok() || IsCode(s, absl::StatusCode::kResourceExhausted)) << s;
    if (IsCode(s, absl::StatusCode::kResourceExhausted)) ++refused;
  }
  EXPECT_GE(refused, 1);
  // Everyone else is unaffected.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(client_->Exists(ns_, {RandomKey(rng_)}).ok());
  EXPECT_GE(Metric("kvstash_principal_throttled_total{principal=\"limited\",kind=\"calls\"}"), 1);
  EXPECT_GE(Metric("kvstash_principal_calls_total{principal=\"ops\"}"), 3);
  ExpectStillServing();
}

// What only gRPC has: the authorization metadata.
class GrpcAuthTest : public AuthTest {};

TEST_P(GrpcAuthTest, AuthorizationMetadataMustBeABearerToken) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  std::unique_ptr<v1::KvStash::Stub> stub = RawStub(daemon_->address());
  v1::StatsRequest req;
  v1::StatsResponse resp;
  // Another scheme is refused; the scheme's case does not matter.
  for (const auto& [value, code] : std::vector<std::pair<std::string, grpc::StatusCode>>{
           {std::string("Basic ") + kOpsToken, grpc::StatusCode::UNAUTHENTICATED},
           {"Bearer", grpc::StatusCode::UNAUTHENTICATED},
           {std::string("bearer ") + kOpsToken, grpc::StatusCode::OK},
           {std::string("Bearer ") + kOpsToken, grpc::StatusCode::OK}}) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", value);
    EXPECT_EQ(stub->Stats(&ctx, req, &resp).error_code(), code) << value;
  }
  ExpectStillServing();
}

INSTANTIATE_TEST_SUITE_P(Transports, AuthTest, ::testing::ValuesIn(AllTransports()),
                         TransportTestName);
INSTANTIATE_TEST_SUITE_P(Transports, GrpcAuthTest, ::testing::Values(Transport::kGrpc),
                         TransportTestName);

TEST(AuthStartTest, ABadTokenFileFailsTheStartNamingIt) {
  absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-auth");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = (*dir)->path() + "/tokens.yaml";
  std::ofstream(path) << "principals:\n  - name: x\n    colour: blue\n";
  DaemonOptions options;
  options.set = {"storage.dram.capacity_bytes=64MiB", "ucx.enabled=false",
                 "auth.token_file=" + path};
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start(options);
  ASSERT_FALSE(daemon.ok());
  EXPECT_NE(daemon.status().message().find("auth.token_file"), std::string::npos)
      << daemon.status();
  EXPECT_NE(daemon.status().message().find("colour"), std::string::npos) << daemon.status();
}

TEST(AuthStartTest, NoTokenFileIsLoggedLoudly) {
  DaemonOptions options;
  options.set = {"storage.dram.capacity_bytes=64MiB", "ucx.enabled=false"};
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  EXPECT_TRUE(PollUntil(
      [&] { return (*daemon)->LogTail(100).find("authentication is off") != std::string::npos; },
      absl::Seconds(10)));
}

TEST(AuthStartTest, TheCliReadsItsTokenFile) {
  absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-auth");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string tokens = (*dir)->path() + "/tokens.yaml";
  std::ofstream(tokens) << TokenFileText(DefaultEntries());
  const std::string mine = (*dir)->path() + "/my-token";
  std::ofstream(mine) << kOpsToken << "\n";  // as `echo` writes it
  DaemonOptions options;
  options.set = {"storage.dram.capacity_bytes=64MiB", "ucx.enabled=false",
                 "auth.token_file=" + tokens, "auth.required=true"};
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  unsetenv(kTokenEnvVar);
  absl::StatusOr<CommandResult> refused =
      RunCommand({KVSTASH_CLI_PATH, "--server", (*daemon)->uri(), "stats"});
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->exit.code, 1) << refused->output;
  EXPECT_NE(refused->output.find("UNAUTHENTICATED"), std::string::npos) << refused->output;
  absl::StatusOr<CommandResult> served =
      RunCommand({KVSTASH_CLI_PATH, "--server", (*daemon)->uri(), "--token-file", mine, "stats"});
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_TRUE(served->exit.exited && served->exit.code == 0) << served->output;
}

// What only the UCX data plane has: the Hello's token and direct access.
class UcxAuthTest : public AuthTest {};

TEST_P(UcxAuthTest, DirectAccessOnlyForTrustedPrincipals) {
  if (GetParam() != Transport::kUcxShm) GTEST_SKIP() << "direct access needs shared memory";
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  const std::string in = "kvstash_transport_direct_bytes_total{transport=\"ucx\",direction=\"in\"}";
  const std::string out =
      "kvstash_transport_direct_bytes_total{transport=\"ucx\",direction=\"out\"}";
  // Alice is not trusted: her 1 MiB chunks go through UCX copies, and arrive intact.
  std::unique_ptr<Client> alice = MustConnect(kAliceToken);
  ASSERT_NE(alice, nullptr);
  absl::StatusOr<NamespaceHandle> a = alice->OpenNamespace(TenantNamespace("team-a", "a"));
  ASSERT_TRUE(a.ok()) << a.status();
  const Key128 key = RandomKey(rng_);
  ASSERT_TRUE(PutOne(*alice, *a, key, 1 << 20).ok());
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*alice, *a, key, 1 << 20, &buf, &item).ok());
  ASSERT_TRUE(item.status.ok()) << item.status;
  EXPECT_EQ(FirstPatternMismatch(key, buf.data(), buf.size()), -1);
  EXPECT_EQ(Metric(in), 0);
  EXPECT_EQ(Metric(out), 0);
  // Ops is trusted: the same sizes move through the arena.
  const Key128 other = RandomKey(rng_);
  ASSERT_TRUE(PutOne(*client_, ns_, other, 1 << 20).ok());
  ASSERT_TRUE(GetOne(*client_, ns_, other, 1 << 20, &buf, &item).ok());
  EXPECT_GT(Metric(in), 0);
  EXPECT_GT(Metric(out), 0);
}

TEST_P(UcxAuthTest, HelloWithABadTokenIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/false));
  absl::StatusOr<std::unique_ptr<RawUcxClient>> raw =
      RawUcxClient::Connect(daemon_->ucx_address(), UcxTls(transport()));
  ASSERT_TRUE(raw.ok()) << raw.status();  // no token, not required: anonymous
  absl::StatusOr<RawUcxClient::Reply> bad =
      (*raw)->Call(wire::ucx::Op::kHello, wire::ucx::EncodeHello("kvs_wrong"), absl::Seconds(30));
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_EQ(bad->header.code, static_cast<int>(absl::StatusCode::kUnauthenticated));
  // The connection now presents that token: everything on it is refused.
  absl::StatusOr<RawUcxClient::Reply> after =
      (*raw)->Call(wire::ucx::Op::kStats, "", absl::Seconds(30));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->header.code, static_cast<int>(absl::StatusCode::kUnauthenticated));
  // A Hello body whose length field lies is malformed.
  std::string lying = wire::ucx::EncodeHello("kvs_x");
  lying[0] = 99;
  absl::StatusOr<RawUcxClient::Reply> malformed =
      (*raw)->Call(wire::ucx::Op::kHello, lying, absl::Seconds(30));
  ASSERT_TRUE(malformed.ok()) << malformed.status();
  EXPECT_EQ(malformed->header.code, static_cast<int>(absl::StatusCode::kInvalidArgument));
  ExpectStillServing();
}

// A reply's code and body, or why none came.
std::string Describe(const absl::StatusOr<RawUcxClient::Reply>& reply) {
  if (!reply.ok()) return reply.status().ToString();
  return absl::StrCat("code ", reply->header.code, ": ", reply->body);
}

// A raw connection that said Hello with `token` and attached its data endpoint.
absl::StatusOr<std::unique_ptr<RawUcxClient>> HelloAndAttach(const std::string& address,
                                                             const std::string& tls,
                                                             const std::string& token) {
  absl::StatusOr<std::unique_ptr<RawUcxClient>> raw =
      RawUcxClient::Connect(address, tls, /*peer_errors=*/true, /*attach=*/false);
  if (!raw.ok()) return raw.status();
  absl::StatusOr<RawUcxClient::Reply> hello = (*raw)->Hello(token);
  if (!hello.ok()) return hello.status();
  if (hello->header.code != 0) return absl::InternalError(hello->body);
  if (absl::Status s = (*raw)->SendAttach((*raw)->token()); !s.ok()) return s;
  absl::StatusOr<RawUcxClient::Reply> attached = (*raw)->NextReply(absl::Seconds(30));
  if (!attached.ok()) return attached.status();
  if (attached->header.code != 0) return absl::InternalError(attached->body);
  return raw;
}

TEST_P(UcxAuthTest, AttachNeedsTheConnectionsHelloAndItsSecretToken) {
  // One worker: every connection draws its token from the same place.
  extra_set_ = {"ucx.worker_threads=1"};
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  const std::string tls = UcxTls(transport());
  absl::StatusOr<std::unique_ptr<RawUcxClient>> attacker =
      RawUcxClient::Connect(daemon_->ucx_address(), tls, /*peer_errors=*/true, /*attach=*/false);
  ASSERT_TRUE(attacker.ok()) << attacker.status();
  absl::StatusOr<RawUcxClient::Reply> hello = (*attacker)->Hello(kBobToken);
  ASSERT_TRUE(hello.ok()) << hello.status();
  ASSERT_EQ(hello->header.code, 0) << hello->body;
  const uint64_t mine = (*attacker)->token();
  EXPECT_NE(mine, 0u);
  // The victim connects next; its refused Hello shows the daemon has its connection.
  absl::StatusOr<std::unique_ptr<RawUcxClient>> victim =
      RawUcxClient::Connect(daemon_->ucx_address(), tls, /*peer_errors=*/true, /*attach=*/false);
  ASSERT_TRUE(victim.ok()) << victim.status();
  absl::StatusOr<RawUcxClient::Reply> refused = (*victim)->Hello("kvs_wrong");
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->header.code, static_cast<int>(absl::StatusCode::kUnauthenticated));
  // The attacker names the tokens next to its own from its own worker: nothing attaches
  // (an attached connection would answer, if only with an error).
  for (uint64_t guess : {mine + 1, mine + 2, mine + 3, mine - 1}) {
    ASSERT_TRUE((*attacker)->SendAttach(guess).ok());
  }
  absl::StatusOr<RawUcxClient::Reply> none = (*attacker)->NextReply(absl::Seconds(2));
  EXPECT_TRUE(IsCode(none.status(), absl::StatusCode::kDeadlineExceeded))
      << "an Attach with a guessed token was answered: " << Describe(none);
  // The victim connects as usual and is served as itself.
  hello = (*victim)->Hello(kOpsToken);
  ASSERT_TRUE(hello.ok()) << hello.status();
  ASSERT_EQ(hello->header.code, 0) << hello->body;
  const uint64_t theirs = (*victim)->token();
  EXPECT_NE(theirs, 0u);
  EXPECT_GT(theirs > mine ? theirs - mine : mine - theirs, uint64_t{1} << 20)
      << "consecutive connections got near tokens: " << mine << " " << theirs;
  ASSERT_TRUE((*victim)->SendAttach(theirs).ok());
  absl::StatusOr<RawUcxClient::Reply> attached = (*victim)->NextReply(absl::Seconds(30));
  ASSERT_TRUE(attached.ok()) << attached.status();
  EXPECT_EQ(attached->header.code, 0) << attached->body;
  // A live connection's token, even known, cannot attach a second data endpoint.
  ASSERT_TRUE((*attacker)->SendAttach(theirs).ok());
  none = (*attacker)->NextReply(absl::Seconds(2));
  EXPECT_TRUE(IsCode(none.status(), absl::StatusCode::kDeadlineExceeded))
      << "a second Attach was answered: " << Describe(none);
  // Ops may read every tenant's counters: the victim's calls run as ops.
  absl::StatusOr<RawUcxClient::Reply> stats =
      (*victim)->Call(wire::ucx::Op::kStats, "", absl::Seconds(30));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->header.code, 0) << stats->body;
  // Further connections' tokens are as far apart.
  std::vector<uint64_t> tokens = {mine, theirs};
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::unique_ptr<RawUcxClient>> more =
        HelloAndAttach(daemon_->ucx_address(), tls, kBobToken);
    ASSERT_TRUE(more.ok()) << more.status();
    tokens.push_back((*more)->token());
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (size_t j = i + 1; j < tokens.size(); ++j) {
      const uint64_t a = tokens[i];
      const uint64_t b = tokens[j];
      EXPECT_GT(a > b ? a - b : b - a, uint64_t{1} << 20) << a << " " << b;
    }
  }
  ExpectStillServing();
}

TEST_P(UcxAuthTest, EveryPutCallCountsAgainstTheLimitsWhateverItsIndex) {
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  absl::StatusOr<std::unique_ptr<RawUcxClient>> raw =
      HelloAndAttach(daemon_->ucx_address(), UcxTls(transport()), kSingleToken);
  ASSERT_TRUE(raw.ok()) << raw.status();
  absl::StatusOr<std::string> ns = (*raw)->RegisterNamespace("single-ns");
  ASSERT_TRUE(ns.ok()) << ns.status();
  const std::vector<uint8_t> payload(4096, 7);
  // Sends chunk `index` of `count` of Put call `id` and returns its reply's code.
  auto put = [&](uint64_t id, uint32_t index, uint32_t count) -> int {
    uint8_t msg[sizeof(wire::ucx::RequestHeader) + sizeof(wire::ucx::PutFields)] = {};
    const wire::ucx::RequestHeader h = wire::ucx::MakeRequestHeader(
        wire::ucx::Op::kPut, id, reinterpret_cast<const uint8_t*>(ns->data()));
    wire::ucx::PutFields f{};
    const Key128 key = RandomKey(rng_);
    std::memcpy(f.key, key.data(), sizeof(f.key));
    f.size_bytes = payload.size();
    f.tokens = 16;
    f.index = index;
    f.count = count;
    std::memcpy(msg, &h, sizeof(h));
    std::memcpy(msg + sizeof(h), &f, sizeof(f));
    EXPECT_TRUE((*raw)->Send(msg, sizeof(msg), payload.data(), payload.size()).ok());
    absl::StatusOr<RawUcxClient::Reply> reply = (*raw)->NextReply(absl::Seconds(30));
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? reply->header.code : -1;
  };
  // A call whose first chunk is not index 0 is admitted, and holds the principal's one
  // call until all its chunks are answered: a second call is refused, index 1 or not.
  EXPECT_EQ(put(500, 1, 2), 0);
  EXPECT_EQ(put(501, 1, 2), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(put(502, 0, 1), static_cast<int>(absl::StatusCode::kResourceExhausted));
  // Another principal is unaffected.
  EXPECT_TRUE(PutOne(*client_, ns_, RandomKey(rng_)).ok());
  // The call's last chunk ends it; the next call is admitted, and holds the slot in turn.
  EXPECT_EQ(put(500, 0, 2), 0);
  EXPECT_EQ(put(503, 2, 3), 0);
  EXPECT_EQ(put(504, 1, 2), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(put(503, 0, 3), 0);
  EXPECT_EQ(put(503, 1, 3), 0);
  EXPECT_EQ(put(505, 0, 1), 0);
  // A refused call's other chunks are refused with it, even once the principal has room.
  EXPECT_EQ(put(504, 0, 2), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(put(507, 0, 1), 0);
  // Closing the connection ends a call left open: once the daemon notices, the principal
  // is admitted again.
  EXPECT_EQ(put(506, 3, 4), 0);
  raw->reset();
  absl::StatusOr<std::unique_ptr<RawUcxClient>> again =
      HelloAndAttach(daemon_->ucx_address(), UcxTls(transport()), kSingleToken);
  ASSERT_TRUE(again.ok()) << again.status();
  int code = -1;
  for (const absl::Time give_up = absl::Now() + absl::Seconds(30); absl::Now() < give_up;) {
    absl::StatusOr<RawUcxClient::Reply> list =
        (*again)->Call(wire::ucx::Op::kListNamespaces, "", absl::Seconds(30));
    ASSERT_TRUE(list.ok()) << list.status();
    code = list->header.code;
    if (code != static_cast<int>(absl::StatusCode::kResourceExhausted)) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(code, 0);
  ExpectStillServing();
}

INSTANTIATE_TEST_SUITE_P(Transports, UcxAuthTest, ::testing::ValuesIn(UcxTransports()),
                         TransportTestName);

}  // namespace
}  // namespace kvstash::testing
