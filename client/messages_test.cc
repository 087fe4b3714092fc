// The request messages and reply checks every transport shares (messages.h).
#include "client/messages.h"

#include <gtest/gtest.h>

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
  UnaryRequest req = LookupRequest(ns, keys, 250);
  EXPECT_EQ(req.method, UnaryMethod::kLookup);
  ASSERT_NE(req.ns, nullptr);
  EXPECT_EQ(*req.ns, ns);
  v1::LookupRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(req.body));
  EXPECT_EQ(parsed.namespace_id(), KeyToBytes(ns));
  EXPECT_EQ(parsed.keys(), KeysToBytes(keys));
  EXPECT_EQ(parsed.lease_ms(), 250u);
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
