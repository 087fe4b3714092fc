// Authentication and per-tenant authorization against a real kvstashd, over every
// transport: calls without a token, with a wrong or revoked token, a principal of one
// tenant reaching another's chunks, namespaces and admin calls, Stats and ListNamespaces
// filtered by rights, per-principal call limits, and direct access only for trusted
// principals. After every refusal the daemon still serves a good client.
#include "tests/auth_fixture.h"

namespace kvstash::testing {
namespace {

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

// The local arena socket hands the arena to trusted principals only: the others write and
// read the same bytes through gRPC.
TEST_P(AuthTest, LocalArenaOnlyForTrustedPrincipals) {
  if (GetParam() != Transport::kGrpcLocal) GTEST_SKIP() << "the local arena is for unix://";
  ASSERT_NO_FATAL_FAILURE(StartWithAuth(/*required=*/true));
  const std::string out =
      "kvstash_transport_direct_bytes_total{transport=\"local\",direction=\"out\"}";
  const std::string in =
      "kvstash_transport_direct_bytes_total{transport=\"local\",direction=\"in\"}";
  std::unique_ptr<Client> alice = MustConnect(kAliceToken);
  ASSERT_NE(alice, nullptr);
  absl::StatusOr<NamespaceHandle> a = alice->OpenNamespace(TenantNamespace("team-a", "a"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(*alice, *a));
  EXPECT_EQ(Metric(out), 0) << "an untrusted principal was handed the arena";
  EXPECT_EQ(Metric(in), 0) << "an untrusted principal was handed the arena";
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(*client_, ns_));
  EXPECT_EQ(Metric(out), 1 << 20) << "ops is trusted: its get reads the arena";
  EXPECT_EQ(Metric(in), 1 << 20) << "ops is trusted: its put writes the arena";
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

INSTANTIATE_TEST_SUITE_P(Transports, AuthTest, ::testing::ValuesIn(AllTransportsAndLocalSocket()),
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
}  // namespace
}  // namespace kvstash::testing
