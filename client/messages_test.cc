// The request messages and reply checks every transport shares (messages.h).
#include "client/messages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "client/wire_convert.h"
#include "kvstash/v1/kvstash.pb.h"

namespace kvstash::client_internal {
namespace {

Key128 KeyOf(uint8_t b) {
  Key128 k{};
  k.fill(b);
  return k;
}

std::string LookupReply(uint32_t hits, const std::string& tiers) {
  v1::LookupResponse resp;
  resp.set_hit_count(hits);
  resp.set_tiers(tiers);
  resp.set_lease_id(7);
  return resp.SerializeAsString();
}

TEST(MessagesTest, LookupRequestCarriesNamespaceKeysAndLease) {
  const Key128 ns = KeyOf(1);
  const std::vector<Key128> keys = {KeyOf(2), KeyOf(3)};
  UnaryRequest req = LookupRequest(ns, keys, 250, 99);
  EXPECT_EQ(req.method, UnaryMethod::kLookup);
  ASSERT_NE(req.ns, nullptr);
  EXPECT_EQ(*req.ns, ns);
  v1::LookupRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(req.body));
  EXPECT_EQ(parsed.namespace_id(), KeyToBytes(ns));
  EXPECT_EQ(parsed.keys(), KeysToBytes(keys));
  EXPECT_EQ(parsed.lease_ms(), 250u);
  EXPECT_EQ(parsed.session_id(), 99u);
}

TEST(MessagesTest, AdminRequestsAndReplies) {
  const Key128 ns = KeyOf(1);
  const std::vector<Key128> keys = {KeyOf(2), KeyOf(3)};
  v1::PinRequest pin;
  UnaryRequest req = PinRequest(ns, keys, false);
  EXPECT_EQ(req.method, UnaryMethod::kPin);
  ASSERT_TRUE(pin.ParseFromString(req.body));
  EXPECT_EQ(pin.keys(), KeysToBytes(keys));
  EXPECT_TRUE(pin.unpin());
  v1::EndSessionRequest end;
  ASSERT_TRUE(end.ParseFromString(EndSessionRequest(ns, 12).body));
  EXPECT_EQ(end.session_id(), 12u);
  EXPECT_EQ(*ClearNamespaceRequest(ns).ns, ns);
  EXPECT_EQ(ListNamespacesRequest().ns, nullptr);

  v1::PinResponse pinned;
  pinned.set_changed(3);  // more than the 2 keys asked about
  EXPECT_EQ(ParsePinReply(pinned.SerializeAsString(), 2).status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(*ParsePinReply(pinned.SerializeAsString(), 3), 3u);

  v1::ListNamespacesResponse list;
  v1::NamespaceUsage* u = list.add_namespaces();
  u->set_namespace_id(KeyToBytes(ns));
  u->mutable_spec()->set_model_id("m");
  u->set_tenant("t");
  v1::TierUsage* nvme = u->add_tiers();
  nvme->set_tier(v1::TIER_NVME);
  nvme->set_chunks(1);
  nvme->set_bytes(5);
  v1::NamespaceUsage* legacy = list.add_namespaces();  // from a daemon before `tiers`
  legacy->set_namespace_id(KeyToBytes(KeyOf(4)));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  legacy->set_dram_chunks(2);
  legacy->set_dram_bytes(7);
#pragma GCC diagnostic pop
  absl::StatusOr<std::vector<NamespaceUsage>> usages =
      ParseListNamespacesReply(list.SerializeAsString());
  ASSERT_TRUE(usages.ok()) << usages.status();
  ASSERT_EQ(usages->size(), 2u);
  EXPECT_TRUE((*usages)[0].registered);
  EXPECT_EQ((*usages)[0].spec.model_id, "m");
  EXPECT_EQ((*usages)[0].tenant, "t");
  ASSERT_EQ((*usages)[0].tiers.size(), 1u);
  EXPECT_EQ((*usages)[0].Of(ChunkTier::kNvme).bytes, 5u);
  EXPECT_EQ((*usages)[0].Of(ChunkTier::kDram).chunks, 0u);
  EXPECT_FALSE((*usages)[1].registered);
  ASSERT_EQ((*usages)[1].tiers.size(), 1u);
  EXPECT_EQ((*usages)[1].tiers[0].tier, ChunkTier::kDram);
  EXPECT_EQ((*usages)[1].tiers[0].chunks, 2u);
  EXPECT_EQ((*usages)[1].tiers[0].bytes, 7u);
  list.add_namespaces()->set_namespace_id("short");
  EXPECT_EQ(ParseListNamespacesReply(list.SerializeAsString()).status().code(),
            absl::StatusCode::kInternal);
}

TEST(WireConvertTest, HintsOnBothWires) {
  PutHints none;
  EXPECT_FALSE(HasHints(none));
  PutHints h;
  h.has_parent = true;
  h.parent = KeyOf(7);
  h.session_id = 5;
  h.ttl_ms = 100;
  h.priority = Priority::kLow;
  h.pin = true;
  EXPECT_TRUE(HasHints(h));
  const v1::ChunkHints proto = HintsToProto(h);
  EXPECT_EQ(proto.parent_key(), KeyToBytes(KeyOf(7)));
  EXPECT_EQ(proto.session_id(), 5u);
  EXPECT_EQ(proto.ttl_ms(), 100u);
  EXPECT_EQ(proto.priority(), v1::PRIORITY_LOW);
  EXPECT_TRUE(proto.pin());
  const wire::ucx::PutHintsFields ucx = HintsToUcx(h);
  // Packed fields are copied out before comparing (no references to them).
  Key128 parent{};
  std::memcpy(parent.data(), ucx.parent_key, parent.size());
  EXPECT_EQ(parent, KeyOf(7));
  EXPECT_EQ(int{ucx.hint_flags}, wire::ucx::kHintHasParent | wire::ucx::kHintPin);
  EXPECT_EQ(uint64_t{ucx.session_id}, 5u);
  EXPECT_EQ(uint32_t{ucx.ttl_ms}, 100u);
  EXPECT_EQ(int{ucx.priority}, 1);
  EXPECT_EQ(int{ucx.reserved}, 0);
  EXPECT_TRUE(HintsToProto(none).parent_key().empty());
  EXPECT_EQ(int{HintsToUcx(none).hint_flags}, 0);
}

TEST(MessagesTest, CallsWithoutANamespaceNameNone) {
  EXPECT_EQ(HealthRequest().ns, nullptr);
  EXPECT_EQ(StatsRequest(nullptr).ns, nullptr);
  EXPECT_EQ(RegisterNamespaceRequest(Namespace{}).ns, nullptr);
}

TEST(MessagesTest, LookupReplyIsCheckedAgainstTheRequest) {
  const std::string dram(1, static_cast<char>(v1::TIER_DRAM));
  absl::StatusOr<LookupResult> ok = ParseLookupReply(LookupReply(1, dram), 2);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->hit_count, 1u);
  EXPECT_EQ(ok->tiers, std::vector<ChunkTier>{ChunkTier::kDram});
  EXPECT_EQ(ok->lease_id, 7u);
  // More hits than keys, and tiers that do not match the hits.
  EXPECT_EQ(ParseLookupReply(LookupReply(3, dram + dram + dram), 2).status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(ParseLookupReply(LookupReply(1, ""), 2).status().code(), absl::StatusCode::kInternal);
}

TEST(MessagesTest, ExistsReplyNeedsOneAnswerPerKey) {
  v1::ExistsResponse resp;
  resp.set_present(std::string(2, '\0'));
  EXPECT_TRUE(ParseExistsReply(resp.SerializeAsString(), 2).ok());
  absl::Status s = ParseExistsReply(resp.SerializeAsString(), 3).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "ExistsResponse: 2 answers for 3 keys");
}

TEST(MessagesTest, UnparsableRepliesAreInternal) {
  const std::string junk = "\xff\xff\xff";
  EXPECT_EQ(ParseHealthReply(junk).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ParseDeleteReply(junk).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ParseStatsReply(junk, nullptr).status().code(), absl::StatusCode::kInternal);
}

TEST(MessagesTest, RegisterReplyNeedsA16ByteId) {
  v1::RegisterNamespaceResponse resp;
  resp.set_namespace_id("short");
  EXPECT_EQ(ParseRegisterNamespaceReply(resp.SerializeAsString()).status().code(),
            absl::StatusCode::kInternal);
  resp.set_namespace_id(KeyToBytes(KeyOf(9)));
  absl::StatusOr<Key128> id = ParseRegisterNamespaceReply(resp.SerializeAsString());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, KeyOf(9));
}

TEST(MessagesTest, ResetLeavesEveryItemUnansweredAndRetryable) {
  GetItem get;
  get.size = 5;
  get.checksum = 3;
  get.status = absl::OkStatus();
  ResetGetResults(absl::MakeSpan(&get, 1));
  EXPECT_EQ(get.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(get.size, 0u);
  EXPECT_EQ(get.checksum, 0u);
  PutItem put;
  put.already_present = true;
  ResetPutResults(absl::MakeSpan(&put, 1));
  EXPECT_EQ(put.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(put.already_present);
}

TEST(MessagesTest, ChunkLargerThanTheBufferIsSkippedWithItsSize) {
  GetItem item;
  item.key = KeyOf(4);
  item.capacity = 10;
  EXPECT_TRUE(AcceptGetChunk(ChunkMeta{10, 1, 2, 3}, &item));
  EXPECT_EQ(item.tokens, 1u);
  EXPECT_FALSE(AcceptGetChunk(ChunkMeta{11, 1, 2, 3}, &item));
  EXPECT_EQ(item.size, 11u);
  EXPECT_EQ(item.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(item.status.message(),
            "chunk " + KeyToHex(item.key) + " has 11 bytes; the buffer holds 10");
}

TEST(MessagesTest, ChunkErrorsNameTheChunk) {
  const Key128 key = KeyOf(5);
  absl::Status missing = GetChunkError(key, 5, "");
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "chunk " + KeyToHex(key) + " not found");
  absl::Status detailed = GetChunkError(key, 13, "nvme read failed");
  EXPECT_EQ(detailed.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(detailed.message(), "chunk " + KeyToHex(key) + ": nvme read failed");
}

}  // namespace
}  // namespace kvstash::client_internal
