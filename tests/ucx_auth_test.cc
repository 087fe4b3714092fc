// UCX authentication against a real kvstashd: the Hello's token, the Attach tied to a
// successful Hello by a secret per-connection token, per-principal limits on Put calls
// whatever their chunk index, and direct access only for trusted principals.
#include "tests/auth_fixture.h"

namespace kvstash::testing {
namespace {

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
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(*alice, *a));
  EXPECT_EQ(Metric(in), 0);
  EXPECT_EQ(Metric(out), 0);
  // Ops is trusted: the same sizes move through the arena.
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTrip(*client_, ns_));
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
