// What only the UCX data plane has, over TCP and over shared memory (UCX_TLS=sm,self):
// wire-level errors answered on a connection that stays usable, direct access to the
// daemon's arena (shared memory only) with its reservations and holds, the Attach and TCP
// segment checks, and idle connections. Behaviour UCX shares with gRPC is in
// roundtrip_test.cc.
#include <xxhash.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/ucx_wire.h"
#include "tests/daemon_fixture.h"
#include "tests/daemon_process.h"
#include "tests/metrics_test_util.h"
#include "tests/test_util.h"
#include "tests/ucx_raw_client.h"

namespace kvstash::testing {
namespace {

namespace ucx = wire::ucx;

class UcxTest : public TransportFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartDaemonOverParam({"storage.dram.capacity_bytes=768MiB"}));
    model_ = spec_.model_id;
  }

  Payload MakePayload(size_t size, uint32_t tag) {
    Payload p;
    p.key = RandomKey(rng_);
    p.bytes = PatternBytes(p.key, size);
    p.tokens = tag;
    p.format = 0xF00D0000u + tag;
    return p;
  }

  void ExpectStored(Client& client, const Payload& p) {
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(client, ns_, p.key, p.bytes.size(), &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status << " size " << p.bytes.size();
    EXPECT_EQ(item.size, p.bytes.size());
    EXPECT_EQ(item.tokens, p.tokens);
    EXPECT_EQ(item.format, p.format);
    // Put sent checksum 0: the daemon's (for rendezvous payloads computed after the reply).
    EXPECT_EQ(item.checksum, XXH3_64bits(p.bytes.data(), p.bytes.size()))
        << "checksum reported for " << p.bytes.size() << " bytes";
    EXPECT_EQ(FirstPatternMismatch(p.key, buf.data(), buf.size()), -1)
        << "payload of " << p.bytes.size() << " bytes differs";
  }

  // kvstash_transport_direct_bytes_total{transport="ucx",direction=`direction`}.
  double DirectBytes(const std::string& direction) {
    absl::StatusOr<double> v = MetricValue(
        *daemon_,
        "kvstash_transport_direct_bytes_total{transport=\"ucx\",direction=\"" + direction + "\"}");
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : -1;
  }
  bool shm() const { return transport() == Transport::kUcxShm; }

  std::unique_ptr<RawUcxClient> Raw() {
    auto raw = RawUcxClient::Connect(daemon_->ucx_address(), UcxTls(transport()));
    EXPECT_TRUE(raw.ok()) << raw.status();
    return raw.ok() ? std::move(*raw) : nullptr;
  }

  std::mt19937_64 rng_{777};
  std::string model_;
};

// Malformed messages get a clear error reply, and the connection keeps working.
TEST_P(UcxTest, MalformedMessagesAnsweredOnAUsableConnection) {
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  auto ns = raw->RegisterNamespace(model_);
  ASSERT_TRUE(ns.ok()) << ns.status();
  auto expect_error = [&](const void* header, size_t len, const void* data, size_t size,
                          absl::StatusCode code, const std::string& text) {
    ASSERT_TRUE(raw->Send(header, len, data, size).ok());
    auto reply = raw->NextReply(absl::Seconds(30));
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->header.code, static_cast<int>(code)) << reply->body;
    EXPECT_EQ(reply->header.index, ucx::kWholeRequest);
    EXPECT_TRUE(absl::StrContains(reply->body, text)) << reply->body;
  };
  ucx::RequestHeader h = ucx::MakeRequestHeader(ucx::Op::kHealth, 7, nullptr);
  h.magic = 0x12345678;
  expect_error(&h, sizeof(h), nullptr, 0, absl::StatusCode::kInvalidArgument, "bad magic");
  h = ucx::MakeRequestHeader(ucx::Op::kHealth, 8, nullptr);
  h.version = 99;
  expect_error(&h, sizeof(h), nullptr, 0, absl::StatusCode::kInvalidArgument, "version 99");
  expect_error(&h, 5, nullptr, 0, absl::StatusCode::kInvalidArgument, "at least 32");
  h = ucx::MakeRequestHeader(ucx::Op::kHealth, 9, nullptr);
  h.op = 200;
  expect_error(&h, sizeof(h), nullptr, 0, absl::StatusCode::kInvalidArgument, "unknown op");

  // A Put whose size_bytes disagrees with the payload it carries.
  uint8_t put[sizeof(ucx::RequestHeader) + sizeof(ucx::PutFields)] = {};
  h = ucx::MakeRequestHeader(ucx::Op::kPut, 10, reinterpret_cast<const uint8_t*>(ns->data()));
  ucx::PutFields f{};
  f.size_bytes = 4096;
  f.count = 1;
  std::memcpy(put, &h, sizeof(h));
  std::memcpy(put + sizeof(h), &f, sizeof(f));
  const std::vector<uint8_t> payload(1000, 7);
  expect_error(put, sizeof(put), payload.data(), payload.size(), absl::StatusCode::kInvalidArgument,
               "size_bytes is 4096");
  // A Get whose count disagrees with its body.
  uint8_t get[sizeof(ucx::RequestHeader) + sizeof(ucx::GetFields)] = {};
  h = ucx::MakeRequestHeader(ucx::Op::kGet, 11, reinterpret_cast<const uint8_t*>(ns->data()));
  ucx::GetFields g{};
  g.count = 3;
  std::memcpy(get, &h, sizeof(h));
  std::memcpy(get + sizeof(h), &g, sizeof(g));
  expect_error(get, sizeof(get), payload.data(), 24, absl::StatusCode::kInvalidArgument,
               "for 3 keys");
  // A body that is not the op's request message.
  h = ucx::MakeRequestHeader(ucx::Op::kLookup, 12, nullptr);
  expect_error(&h, sizeof(h), payload.data(), 100, absl::StatusCode::kInvalidArgument,
               "not a valid");

  auto health =
      raw->Call(ucx::Op::kHealth, v1::HealthRequest().SerializeAsString(), absl::Seconds(30));
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->header.code, 0) << health->body;
  v1::HealthResponse resp;
  ASSERT_TRUE(resp.ParseFromString(health->body));
  EXPECT_EQ(resp.state(), v1::HealthResponse::SERVING);
}

TEST_P(UcxTest, DirectAccessOverSharedMemoryOnly) {
  Payload big = MakePayload(4 * kMiB + 5, 1);  // reserved, written by the client, committed
  Payload small = MakePayload(64 * kKiB, 2);   // below kDirectPutMin: sent through UCX
  ASSERT_TRUE(PutAll(*client_, ns_, {big, small}).ok());
  const double in = DirectBytes("in");
  EXPECT_EQ(in, shm() ? static_cast<double>(big.bytes.size()) : 0.0);
  ASSERT_NO_FATAL_FAILURE(ExpectStored(*client_, big));
  ASSERT_NO_FATAL_FAILURE(ExpectStored(*client_, small));
  // Gets of chunks in the arena are read in place, small ones included.
  EXPECT_EQ(DirectBytes("out"),
            shm() ? static_cast<double>(big.bytes.size() + small.bytes.size()) : 0.0);
  // A repeat put of a stored key is answered before any byte moves.
  std::vector<PutItem> again(1);
  again[0].key = big.key;
  again[0].data = big.bytes.data();
  again[0].size = big.bytes.size();
  ASSERT_TRUE(client_->Put(ns_, absl::MakeSpan(again)).ok());
  EXPECT_TRUE(again[0].already_present);
  EXPECT_EQ(DirectBytes("in"), in);
}

TEST_P(UcxTest, DirectPutReservationsAreCheckedAndDroppedWithTheConnection) {
  if (!shm()) GTEST_SKIP() << "direct access needs shared memory";
  auto raw = Raw();
  ASSERT_NE(raw, nullptr);
  auto ns = raw->RegisterNamespace(model_);
  ASSERT_TRUE(ns.ok()) << ns.status();
  const Key128 key = RandomKey(rng_);
  uint8_t put[sizeof(ucx::RequestHeader) + sizeof(ucx::PutFields)] = {};
  ucx::RequestHeader h =
      ucx::MakeRequestHeader(ucx::Op::kPut, 20, reinterpret_cast<const uint8_t*>(ns->data()));
  h.flags = ucx::kFlagDirect;
  ucx::PutFields f{};
  std::memcpy(f.key, key.data(), 16);
  f.size_bytes = 2 * kMiB;
  f.count = 1;
  std::memcpy(put, &h, sizeof(h));
  std::memcpy(put + sizeof(h), &f, sizeof(f));
  // A direct Put that carries a payload is malformed.
  const std::vector<uint8_t> payload(100, 1);
  ASSERT_TRUE(raw->Send(put, sizeof(put), payload.data(), payload.size()).ok());
  auto reply = raw->NextReply(absl::Seconds(30));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header.code, static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(absl::StrContains(reply->body, "carries no payload")) << reply->body;
  // Without one the chunk is reserved: the reply names 2 MiB of arena runs and a handle.
  ASSERT_TRUE(raw->Send(put, sizeof(put), nullptr, 0).ok());
  reply = raw->NextReply(absl::Seconds(30));
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->header.code, 0) << reply->body;
  ASSERT_EQ(reply->header.flags, ucx::kFlagDirectRuns);
  EXPECT_NE(reply->header.handle, 0u);
  ASSERT_EQ(reply->body.size() % sizeof(ucx::ArenaRun), 0u);
  uint64_t total = 0;
  for (size_t at = 0; at < reply->body.size(); at += sizeof(ucx::ArenaRun)) {
    ucx::ArenaRun run;
    std::memcpy(&run, reply->body.data() + at, sizeof(run));
    total += run.length;
  }
  EXPECT_EQ(total, 2 * kMiB);
  // A Commit naming another handle fails that chunk, as the Put's reply.
  uint8_t commit[sizeof(ucx::RequestHeader) + sizeof(ucx::CommitFields)] = {};
  h = ucx::MakeRequestHeader(ucx::Op::kCommit, 20, nullptr);
  const ucx::CommitFields c{reply->header.handle + 1000, 0, 0};
  std::memcpy(commit, &h, sizeof(h));
  std::memcpy(commit + sizeof(h), &c, sizeof(c));
  ASSERT_TRUE(raw->Send(commit, sizeof(commit), nullptr, 0).ok());
  auto failed = raw->NextReply(absl::Seconds(30));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(failed->header.op, static_cast<uint8_t>(ucx::Op::kPut));
  EXPECT_EQ(failed->header.index, 0u);
  EXPECT_EQ(failed->header.code, static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(absl::StrContains(failed->body, "no reservation")) << failed->body;
  // The reservation never committed: it is invisible, and gone once the client is.
  auto present = client_->Exists(ns_, {key});
  ASSERT_TRUE(present.ok()) << present.status();
  EXPECT_EQ((*present)[0], ChunkTier::kNone);
  const uint64_t before = client_->Stats(nullptr)->Of(ChunkTier::kDram).used_bytes;
  raw.reset();
  uint64_t after = before;
  for (int i = 0; i < 500 && after >= before; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    after = client_->Stats(nullptr)->Of(ChunkTier::kDram).used_bytes;
  }
  EXPECT_LT(after, before) << "the dropped reservation's memory was not returned";
  present = client_->Exists(ns_, {key});
  ASSERT_TRUE(present.ok());
  EXPECT_EQ((*present)[0], ChunkTier::kNone);
}

// Puts one 8 MiB chunk in a fresh namespace named `model` and reads it back byte-exact.
void ExpectRoundTripOf8MiB(Client& client, const std::string& model, uint64_t seed) {
  auto ns = client.OpenNamespace(TestNamespace(model));
  ASSERT_TRUE(ns.ok()) << ns.status();
  std::mt19937_64 rng(seed);
  Payload p;
  p.key = RandomKey(rng);
  p.bytes = PatternBytes(p.key, 8 * kMiB);
  ASSERT_TRUE(PutAll(client, *ns, {p}).ok());
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(client, *ns, p.key, p.bytes.size(), &buf, &item).ok());
  ASSERT_TRUE(item.status.ok()) << item.status;
  EXPECT_EQ(FirstPatternMismatch(p.key, buf.data(), buf.size()), -1);
}

// A data endpoint without peer-failure handling is refused at Attach, with a clear error on
// the socket-address endpoint. The daemon used to accept one: a client killed mid-put then
// left its reservation behind over TCP, and over shared memory UCX aborted the daemon.
TEST_P(UcxTest, AttachWithoutPeerErrorHandlingIsRefused) {
  auto refused = RawUcxClient::Connect(daemon_->ucx_address(), UcxTls(transport()),
                                       /*peer_errors=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "peer error handling"))
      << refused.status();
  ASSERT_NE(Raw(), nullptr);  // one that handles peer failures attaches
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTripOf8MiB(*client_, "after-refusal", 17));
}

TEST(UcxDirectOffTest, DaemonWithoutDirectAccessServesThroughUcx) {
  DaemonOptions options;
  options.set = {"storage.dram.capacity_bytes=256MiB", "storage.dram.prefault=false",
                 "ucx.tls=sm,self", "ucx.direct_access=false"};
  auto daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ClientOptions client_options;
  client_options.ucx_tls = "sm,self";
  auto client = ConnectClient((*daemon)->ucx_uri(), client_options);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTripOf8MiB(**client, "direct-off", 5));
  auto address = MetricsAddress(**daemon);
  ASSERT_TRUE(address.ok()) << address.status();
  auto text = Scrape(*address);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::StrContains(
      *text, "kvstash_transport_direct_bytes_total{transport=\"ucx\",direction=\"in\"} 0\n"));
  EXPECT_TRUE(absl::StrContains(
      *text, "kvstash_transport_direct_bytes_total{transport=\"ucx\",direction=\"out\"} 0\n"));
}

// UCX aborts a process that receives a TCP fragment larger than its receive segment, and a
// sender's fragments are as large as its own segment: a client with a larger one used to
// abort the daemon with its first rendezvous put. Now the Hello reply carries the daemon's
// segment and a client with another one stops there with a clear error, while clients that
// match are served, payloads larger than a segment included.
TEST(UcxSegmentTest, MismatchedTcpSegmentIsRefusedAndTheDaemonKeepsServing) {
  DaemonOptions options;
  options.set = {"storage.dram.capacity_bytes=256MiB", "storage.dram.prefault=false", "ucx.tls=tcp",
                 "ucx.tcp_segment_bytes=128KiB"};
  auto daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ClientOptions client_options;
  client_options.ucx_tls = "tcp";
  client_options.max_retries = 0;
  for (int64_t segment : {64 << 10, 256 << 10}) {  // smaller, and the default
    client_options.ucx_tcp_segment_bytes = segment;
    auto refused = Client::Connect((*daemon)->ucx_uri(), client_options);
    ASSERT_FALSE(refused.ok()) << "segment " << segment;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
    EXPECT_TRUE(absl::StrContains(refused.status().message(), "131072")) << refused.status();
    EXPECT_TRUE(absl::StrContains(refused.status().message(), absl::StrCat(segment)))
        << refused.status();
  }
  client_options.ucx_tcp_segment_bytes = 128 << 10;
  auto client = ConnectClient((*daemon)->ucx_uri(), client_options);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_NO_FATAL_FAILURE(ExpectRoundTripOf8MiB(**client, "segment", 11));
  EXPECT_TRUE((*daemon)->Running());
}

// The segment a setting asks for must be the one UCX uses: UCX applies a transport key given
// through ucp_config_modify only under the spelling its release expects and otherwise just
// warns, so a daemon configured for 1 MiB once kept 64 KiB, passed the Hello check, and
// aborted on the first put of a client whose UCX really used 1 MiB. Each side here sets its
// segment once through the settings and once through UCX_TCP_RX_SEG_SIZE (which UCX reads
// itself), so a setting that does not reach UCX aborts a process and fails the test.
TEST(UcxSegmentTest, ConfiguredSegmentIsTheOneUcxUses) {
  struct ScopedEnv {
    explicit ScopedEnv(const char* value) { setenv("UCX_TCP_RX_SEG_SIZE", value, 1); }
    ~ScopedEnv() { unsetenv("UCX_TCP_RX_SEG_SIZE"); }
  };
  for (bool daemon_from_settings : {true, false}) {
    SCOPED_TRACE(daemon_from_settings ? "daemon: settings, client: environment"
                                      : "daemon: environment, client: settings");
    DaemonOptions options;
    options.set = {"storage.dram.capacity_bytes=256MiB", "storage.dram.prefault=false",
                   "ucx.tls=tcp"};
    if (daemon_from_settings) {
      options.set.push_back("ucx.tcp_segment_bytes=1MiB");
    } else {
      options.env = {"UCX_TCP_RX_SEG_SIZE=1M"};
    }
    auto daemon = DaemonProcess::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    ClientOptions client_options;
    client_options.ucx_tls = "tcp";
    client_options.ucx_tcp_segment_bytes = 1 << 20;
    std::optional<ScopedEnv> env;
    if (daemon_from_settings) env.emplace("1M");
    auto client = ConnectClient((*daemon)->ucx_uri(), client_options);
    ASSERT_TRUE(client.ok()) << client.status();
    ASSERT_NO_FATAL_FAILURE(ExpectRoundTripOf8MiB(**client, "segment-applied", 13));
    EXPECT_TRUE((*daemon)->Running());
  }
}

// An engine may hold connections it leaves unused for minutes. UCX checks every endpoint
// (keepalive); over shared memory each check is a message into the client's queue, which
// only the client's own progress drains. Neither side may turn that into a busy daemon: the
// client drains idle connections on its own thread (ClientOptions::ucx_idle_progress_ms),
// and the daemon naps when a client's queue is full anyway (one that never progresses, or
// a hung process). The bound is on the CPU time the daemon spends while nothing is asked of
// it, not on any latency. Measured over these 2 s: 300 ms while the daemon spun on a full
// queue, 50-70 ms now (UCX's own checks at this test's 20 ms keepalive interval).
TEST(UcxIdleTest, IdleConnectionsLeaveTheDaemonIdle) {
  for (int64_t idle_progress_ms : {100, 0}) {
    SCOPED_TRACE(absl::StrCat("ucx_idle_progress_ms ", idle_progress_ms));
    DaemonOptions options;
    options.set = {"storage.dram.capacity_bytes=256MiB", "storage.dram.prefault=false",
                   "ucx.tls=sm,self"};
    options.env = {"UCX_KEEPALIVE_INTERVAL=20ms"};  // the queues fill in seconds, not minutes
    auto daemon = DaemonProcess::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    ClientOptions client_options;
    client_options.ucx_tls = "sm,self";
    client_options.ucx_idle_progress_ms = idle_progress_ms;
    std::mt19937_64 rng(idle_progress_ms);
    std::vector<std::unique_ptr<Client>> clients;
    for (int c = 0; c < 4; ++c) {
      auto client = ConnectClient((*daemon)->ucx_uri(), client_options);
      ASSERT_TRUE(client.ok()) << client.status();
      auto ns = (*client)->OpenNamespace(TestNamespace("idle"));
      ASSERT_TRUE(ns.ok()) << ns.status();
      Payload p;
      p.key = RandomKey(rng);
      p.bytes = PatternBytes(p.key, 64 * kKiB);
      ASSERT_TRUE(PutAll(**client, *ns, {p}).ok());
      for (int i = 0; i < 100; ++i) {  // replies the client's queue releases lazily
        std::vector<uint8_t> buf;
        GetItem item;
        ASSERT_TRUE(GetOne(**client, *ns, p.key, p.bytes.size(), &buf, &item).ok());
        ASSERT_TRUE(item.status.ok()) << item.status;
      }
      clients.push_back(*std::move(client));
    }
    absl::SleepFor(absl::Seconds(2));  // ~100 keepalive rounds: more than a queue holds
    auto before = (*daemon)->CpuTime();
    absl::SleepFor(absl::Seconds(2));
    auto after = (*daemon)->CpuTime();
    ASSERT_TRUE(before.ok() && after.ok()) << before.status() << after.status();
    // ThreadSanitizer multiplies every instruction's cost; a spinning daemon still exceeds it.
    const absl::Duration bound = absl::Milliseconds(kUnderTsan ? 1500 : 150);
    EXPECT_LT(*after - *before, bound) << "daemon CPU over 2 s of idling";
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, UcxTest, ::testing::ValuesIn(UcxTransports()),
                         TransportTestName);

}  // namespace
}  // namespace kvstash::testing
