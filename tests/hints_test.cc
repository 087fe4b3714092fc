// Application hints and the admin calls against a real kvstashd over every transport:
// hinted puts and session lookups, malformed hints refused by name, the admin calls
// (list, clear, pin/unpin, end session) and their refusals; and on UCX, that a Put header
// without the hints block, as older clients send it, is still accepted.
#include <cstring>
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
#include "tests/test_util.h"
#include "tests/ucx_raw_client.h"

namespace kvstash::testing {
namespace {

namespace ucx = wire::ucx;

constexpr uint32_t kMaxTtlMs = 60000;

class HintsTest : public TransportFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartDaemonOverParam(
        {"storage.dram.capacity_bytes=256MiB", absl::StrCat("server.max_ttl_ms=", kMaxTtlMs)}));
  }

  // `n` chunks of one prompt's chain, each naming the one before as its parent; sizes
  // alternate between 64 KiB and 1 MiB (the latter written in place over shared memory).
  std::vector<Payload> Chain(int n) {
    std::vector<Payload> out;
    for (int i = 0; i < n; ++i) {
      Payload p;
      p.key = RandomKey(rng_);
      p.bytes = PatternBytes(p.key, i % 2 == 0 ? 64 * kKiB : kMiB);
      p.tokens = 16;
      out.push_back(std::move(p));
    }
    return out;
  }

  std::vector<PutItem> Items(const std::vector<Payload>& chain, const PutHints& hints) {
    std::vector<PutItem> items;
    for (size_t i = 0; i < chain.size(); ++i) {
      PutItem item = chain[i].AsPutItem();
      item.hints = hints;
      item.hints.has_parent = i > 0;
      if (i > 0) item.hints.parent = chain[i - 1].key;
      items.push_back(item);
    }
    return items;
  }

  static std::vector<Key128> KeysOf(const std::vector<Payload>& chain) {
    std::vector<Key128> keys;
    for (const Payload& p : chain) keys.push_back(p.key);
    return keys;
  }

  static uint64_t BytesOf(const std::vector<Payload>& chain) {
    uint64_t n = 0;
    for (const Payload& p : chain) n += p.bytes.size();
    return n;
  }

  // This test's namespace as ListNamespaces reports it (a test failure when absent).
  NamespaceUsage Usage() {
    absl::StatusOr<std::vector<NamespaceUsage>> list = client_->ListNamespaces();
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return {};
    for (const NamespaceUsage& u : *list) {
      if (u.id == ns_.id) return u;
    }
    ADD_FAILURE() << "namespace " << KeyToHex(ns_.id) << " not listed";
    return {};
  }

  std::mt19937_64 rng_{2611};
};

TEST_P(HintsTest, HintedChainIsStoredAndASessionLookupHitsIt) {
  const std::vector<Payload> chain = Chain(4);
  PutHints hints;
  hints.session_id = 41;
  hints.ttl_ms = kMaxTtlMs;  // the limit itself is allowed
  hints.priority = Priority::kHigh;
  std::vector<PutItem> items = Items(chain, hints);
  items[3].hints.priority = Priority::kLow;
  items[3].hints.pin = true;
  ASSERT_TRUE(client_->Put(ns_, absl::MakeSpan(items)).ok());
  for (const PutItem& item : items) {
    EXPECT_TRUE(item.status.ok()) << item.status;
    EXPECT_FALSE(item.already_present);
  }
  absl::StatusOr<LookupResult> hits = client_->Lookup(ns_, KeysOf(chain), 0, 41);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 4u);
  for (const Payload& p : chain) {
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(*client_, ns_, p.key, p.bytes.size(), &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_TRUE(buf == p.bytes);
  }
  // A repeat put with other hints is an idempotent repeat, as without hints.
  items[0].hints.priority = Priority::kLow;
  ASSERT_TRUE(client_->Put(ns_, absl::MakeSpan(items).subspan(0, 1)).ok());
  EXPECT_TRUE(items[0].already_present);
}

TEST_P(HintsTest, MalformedHintsFailThePutNamingTheField) {
  const std::vector<Payload> chain = Chain(1);
  struct Case {
    PutHints hints;
    const char* text;
  };
  std::vector<Case> cases(2);
  cases[0].hints.priority = static_cast<Priority>(7);
  cases[0].text = "hints.priority 7";
  cases[1].hints.ttl_ms = kMaxTtlMs + 1;
  cases[1].text = "exceeds server.max_ttl_ms";
  for (const Case& c : cases) {
    std::vector<PutItem> items = Items(chain, c.hints);
    const absl::Status s = client_->Put(ns_, absl::MakeSpan(items));
    // gRPC fails the stream; UCX answers the chunk's request, which fails the call too.
    const absl::Status refused = s.ok() ? items[0].status : s;
    EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
    EXPECT_TRUE(absl::StrContains(refused.message(), c.text)) << refused;
  }
  EXPECT_FALSE(Present(chain[0].key));
}

TEST_P(HintsTest, AdminCallsRefuseAnUnknownNamespace) {
  const NamespaceHandle stranger{TestNamespace("never-registered").Id()};
  const std::vector<Key128> keys = {RandomKey(rng_)};
  EXPECT_TRUE(absl::IsFailedPrecondition(client_->ClearNamespace(stranger).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(client_->Pin(stranger, keys, true).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(client_->EndSession(stranger, 3)));
  const absl::Status zero = client_->EndSession(ns_, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(zero)) << zero;
  EXPECT_TRUE(absl::StrContains(zero.message(), "session_id")) << zero;
  EXPECT_TRUE(client_->EndSession(ns_, 41).ok());
}

TEST_P(HintsTest, ListNamespacesReportsSpecAndTenant) {
  const NamespaceUsage u = Usage();  // registered, nothing stored yet
  EXPECT_TRUE(u.registered);
  EXPECT_EQ(u.spec.model_id, spec_.model_id);
  EXPECT_EQ(u.spec.Id(), ns_.id);
  EXPECT_EQ(u.tenant, spec_.tenant.empty() ? "default" : spec_.tenant);
  EXPECT_EQ(u.Of(ChunkTier::kDram).chunks, 0u);
}

TEST_P(HintsTest, ListNamespacesCountsChunksAndPayloadBytes) {
  const std::vector<Payload> chain = Chain(3);
  ASSERT_TRUE(PutAll(*client_, ns_, chain).ok());
  const NamespaceUsage u = Usage();
  EXPECT_TRUE(u.registered);
  EXPECT_EQ(u.Of(ChunkTier::kDram).chunks, 3u);
  EXPECT_EQ(u.Of(ChunkTier::kDram).bytes, BytesOf(chain));
  EXPECT_EQ(u.Of(ChunkTier::kNvme).chunks, 0u);
  EXPECT_EQ(u.pinned_bytes, 0u);
}

TEST_P(HintsTest, ClearNamespaceDeletesItsChunksOnly) {
  const std::vector<Payload> chain = Chain(3);
  ASSERT_TRUE(PutAll(*client_, ns_, chain).ok());
  auto other = client_->OpenNamespace(TestNamespace("hints-other"));
  ASSERT_TRUE(other.ok()) << other.status();
  const std::vector<Payload> kept = Chain(1);
  ASSERT_TRUE(PutAll(*client_, *other, kept).ok());
  absl::StatusOr<uint64_t> deleted = client_->ClearNamespace(ns_);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 3u);
  for (const Payload& p : chain) EXPECT_FALSE(Present(p.key));
  auto still = client_->Exists(*other, KeysOf(kept));
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_NE((*still)[0], ChunkTier::kNone);
  EXPECT_EQ(Usage().Of(ChunkTier::kDram).chunks, 0u);
  // The namespace stays registered and usable.
  EXPECT_TRUE(PutAll(*client_, ns_, chain).ok());
}

TEST_P(HintsTest, PinAndUnpinAPrefix) {
  const std::vector<Payload> chain = Chain(3);
  ASSERT_TRUE(PutAll(*client_, ns_, chain).ok());
  std::vector<Key128> prefix = KeysOf(chain);
  prefix.push_back(RandomKey(rng_));  // absent: pinning stops there
  absl::StatusOr<uint32_t> pinned = client_->Pin(ns_, prefix, true);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(*pinned, 3u);
  EXPECT_EQ(*client_->Pin(ns_, prefix, true), 0u);  // already pinned: nothing changed
  EXPECT_EQ(Usage().pinned_bytes, BytesOf(chain));
  absl::StatusOr<uint32_t> unpinned = client_->Pin(ns_, prefix, false);
  ASSERT_TRUE(unpinned.ok()) << unpinned.status();
  EXPECT_EQ(*unpinned, 3u);
  EXPECT_EQ(Usage().pinned_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Transports, HintsTest, ::testing::ValuesIn(AllTransports()),
                         TransportTestName);

// Put headers as raw UCX messages: the 80-byte header of clients older than hints, the
// hints block behind flag PUT_HINTS, and the ways that block can be malformed.
class UcxPutHeaderTest : public TransportFixture {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartDaemonOverParam()); }

  // A Put header for a `size`-byte chunk `key`; with `hints`, flag PUT_HINTS and the block.
  static std::vector<uint8_t> PutHeader(const std::string& ns, const Key128& key, uint64_t size,
                                        const ucx::PutHintsFields* hints) {
    ucx::RequestHeader h =
        ucx::MakeRequestHeader(ucx::Op::kPut, 30, reinterpret_cast<const uint8_t*>(ns.data()));
    if (hints != nullptr) h.flags = ucx::kFlagPutHints;
    ucx::PutFields f{};
    std::memcpy(f.key, key.data(), sizeof(f.key));
    f.size_bytes = size;
    f.count = 1;
    std::vector<uint8_t> out(ucx::RequestHeaderLength(ucx::Op::kPut, h.flags));
    std::memcpy(out.data(), &h, sizeof(h));
    std::memcpy(out.data() + sizeof(h), &f, sizeof(f));
    if (hints != nullptr) std::memcpy(out.data() + sizeof(h) + sizeof(f), hints, sizeof(*hints));
    return out;
  }

  std::mt19937_64 rng_{2612};
};

TEST_P(UcxPutHeaderTest, OldAndHintedHeadersAcceptedMalformedOnesRefused) {
  auto raw = RawUcxClient::Connect(daemon_->ucx_address(), UcxTls(transport()));
  ASSERT_TRUE(raw.ok()) << raw.status();
  // The fixture's namespace: registering it again gives its id.
  auto ns = (*raw)->RegisterNamespace(spec_.model_id);
  ASSERT_TRUE(ns.ok()) << ns.status();
  ASSERT_EQ(*ns, std::string(ns_.id.begin(), ns_.id.end()));
  const std::vector<uint8_t> payload(4096, 9);
  auto put = [&](const std::vector<uint8_t>& header) {
    EXPECT_TRUE((*raw)->Send(header.data(), header.size(), payload.data(), payload.size()).ok());
    absl::StatusOr<RawUcxClient::Reply> reply = (*raw)->NextReply(absl::Seconds(30));
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? *reply : RawUcxClient::Reply{};
  };

  const Key128 old_key = RandomKey(rng_);
  RawUcxClient::Reply reply = put(PutHeader(*ns, old_key, payload.size(), nullptr));
  EXPECT_EQ(reply.header.code, 0) << reply.body;
  EXPECT_TRUE(Present(old_key));

  ucx::PutHintsFields hints{};
  std::memcpy(hints.parent_key, old_key.data(), sizeof(hints.parent_key));
  hints.hint_flags = ucx::kHintHasParent | ucx::kHintPin;
  hints.session_id = 8;
  hints.ttl_ms = 1000;
  hints.priority = static_cast<uint8_t>(Priority::kLow);
  const Key128 hinted_key = RandomKey(rng_);
  reply = put(PutHeader(*ns, hinted_key, payload.size(), &hints));
  EXPECT_EQ(reply.header.code, 0) << reply.body;
  EXPECT_TRUE(Present(hinted_key));

  struct Bad {
    std::vector<uint8_t> header;
    const char* text;
  };
  std::vector<Bad> bad;
  // Flag PUT_HINTS without the block.
  std::vector<uint8_t> no_block = PutHeader(*ns, RandomKey(rng_), payload.size(), &hints);
  no_block.resize(sizeof(ucx::RequestHeader) + sizeof(ucx::PutFields));
  bad.push_back({no_block, "expected 112"});
  ucx::PutHintsFields unknown_flag = hints;
  unknown_flag.hint_flags |= 0x80;
  bad.push_back({PutHeader(*ns, RandomKey(rng_), payload.size(), &unknown_flag), "hint_flags"});
  ucx::PutHintsFields bad_priority = hints;
  bad_priority.priority = 9;
  bad.push_back({PutHeader(*ns, RandomKey(rng_), payload.size(), &bad_priority), "hints.priority"});
  for (const Bad& b : bad) {
    reply = put(b.header);
    EXPECT_EQ(reply.header.code, static_cast<int>(absl::StatusCode::kInvalidArgument))
        << reply.body;
    EXPECT_TRUE(absl::StrContains(reply.body, b.text)) << reply.body;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, UcxPutHeaderTest, ::testing::ValuesIn(UcxTransports()),
                         TransportTestName);

}  // namespace
}  // namespace kvstash::testing
