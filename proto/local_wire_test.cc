#include "proto/local_wire.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace kvstash::wire::local {
namespace {

FrameHeader HeaderOf(const std::string& frame) {
  FrameHeader h;
  std::memcpy(&h, frame.data(), sizeof(h));
  return h;
}

TEST(LocalWireTest, FramesCarryTheirOpIdAndBody) {
  const std::string frame = EncodeFrame(Op::kHello, 7, "token");
  const FrameHeader h = HeaderOf(frame);
  EXPECT_TRUE(CheckFrameHeader(h).ok());
  EXPECT_EQ(h.op, static_cast<uint8_t>(Op::kHello));
  EXPECT_EQ(h.request_id, 7u);
  EXPECT_EQ(frame.substr(sizeof(h)), "token");
}

TEST(LocalWireTest, RefusesForeignOrOversizedHeaders) {
  FrameHeader h = HeaderOf(EncodeFrame(Op::kGet, 1, ""));
  FrameHeader bad = h;
  bad.magic = 0x20495250;  // "PRI " of an HTTP/2 preface
  EXPECT_EQ(CheckFrameHeader(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = h;
  bad.version = 9;
  EXPECT_EQ(CheckFrameHeader(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = h;
  bad.op = 0;
  EXPECT_EQ(CheckFrameHeader(bad).code(), absl::StatusCode::kInvalidArgument);
  bad.op = 6;
  EXPECT_EQ(CheckFrameHeader(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = h;
  bad.body_bytes = kMaxBodyBytes + 1;
  EXPECT_EQ(CheckFrameHeader(bad).code(), absl::StatusCode::kInvalidArgument);
}

TEST(LocalWireTest, GetRoundTripsAndRaggedBodiesAreRefused) {
  std::vector<ucx::GetItemRecord> items(3);
  for (size_t i = 0; i < items.size(); ++i) {
    std::memset(items[i].key, static_cast<int>(i + 1), sizeof(items[i].key));
    items[i].capacity = 100 * i;
  }
  GetFields f{};
  f.lease_id = 42;
  const std::string body = EncodeGet(f, items);
  GetFields got{};
  absl::string_view records;
  ASSERT_TRUE(ParseGet(body, &got, &records).ok());
  EXPECT_EQ(got.count, 3u);
  EXPECT_EQ(got.lease_id, 42u);
  EXPECT_EQ(records.size(), 3 * sizeof(ucx::GetItemRecord));
  EXPECT_EQ(ParseGet(body.substr(0, body.size() - 1), &got, &records).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseGet("short", &got, &records).code(), absl::StatusCode::kInvalidArgument);
  // No more items than a reply can answer within kMaxBodyBytes.
  std::vector<ucx::GetItemRecord> many(kMaxGetItems + 1);
  const absl::Status too_many = ParseGet(EncodeGet(f, many), &got, &records);
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument) << too_many;
  EXPECT_GE(sizeof(CallReply) + kMaxGetItems * sizeof(ItemReply),
            kMaxBodyBytes - sizeof(ItemReply));
  EXPECT_LE(sizeof(CallReply) + kMaxGetItems * sizeof(ItemReply), kMaxBodyBytes);
}

TEST(LocalWireTest, GetRepliesListRunsPerItem) {
  std::string body = EncodeCallReply(2);
  const ucx::ArenaRun runs[2] = {{0, 10}, {4096, 6}};
  AppendItem(ItemReply{0, 2, 16, 99, 3, 1},
             absl::string_view(reinterpret_cast<const char*>(runs), sizeof(runs)), &body);
  AppendItem(ItemReply{kNotMapped, 0, 0, 0, 0, 0}, "", &body);
  std::vector<int32_t> codes;
  std::vector<size_t> run_bytes;
  absl::Status call;
  ASSERT_TRUE(ParseGetReply(
                  body, 2,
                  [&](uint32_t, const ItemReply& r, absl::string_view rs) {
                    codes.push_back(r.code);
                    run_bytes.push_back(rs.size());
                  },
                  &call)
                  .ok());
  EXPECT_TRUE(call.ok());
  EXPECT_EQ(codes, (std::vector<int32_t>{0, kNotMapped}));
  EXPECT_EQ(run_bytes, (std::vector<size_t>{sizeof(runs), 0}));
  const auto ignore = [](uint32_t, const ItemReply&, absl::string_view) {};
  EXPECT_EQ(ParseGetReply(body, 3, ignore, &call).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ParseGetReply(body.substr(0, body.size() - 1), 2, ignore, &call).code(),
            absl::StatusCode::kInternal);
  // The whole call's error, even INTERNAL, is not a malformed reply.
  for (const absl::Status& e : {absl::PermissionDeniedError("no"), absl::InternalError("store")}) {
    EXPECT_TRUE(ParseGetReply(EncodeCallError(e), 2, ignore, &call).ok());
    EXPECT_EQ(call, e);
  }
  std::string bad = EncodeCallError(absl::InternalError("x"));
  const int32_t unknown = 99;
  std::memcpy(bad.data(), &unknown, sizeof(unknown));
  EXPECT_EQ(ParseGetReply(bad, 2, ignore, &call).code(), absl::StatusCode::kInternal);
}

TEST(LocalWireTest, PutsCarryFieldsAndHintsPerItem) {
  PutCall call{};
  call.namespace_id[0] = 7;
  std::vector<PutItemRecord> items(2);
  items[1].fields.size_bytes = 4096;
  items[1].hints.ttl_ms = 60;
  PutCall got{};
  absl::string_view records;  // points into `body`
  const std::string body = EncodePut(call, items);
  ASSERT_TRUE(ParsePut(body, &got, &records).ok());
  EXPECT_EQ(got.count, 2u);
  EXPECT_EQ(got.namespace_id[0], 7);
  ASSERT_EQ(records.size(), 2 * sizeof(PutItemRecord));
  PutItemRecord second;
  std::memcpy(&second, records.data() + sizeof(PutItemRecord), sizeof(second));
  EXPECT_EQ(second.fields.size_bytes, 4096u);
  EXPECT_EQ(second.hints.ttl_ms, 60u);
  EXPECT_EQ(ParsePut(body.substr(0, body.size() - 1), &got, &records).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePut(EncodePut(call, {}), &got, &records).code(),
            absl::StatusCode::kInvalidArgument);
  PutCall reserved = call;
  reserved.reserved2 = 1;
  EXPECT_EQ(ParsePut(EncodePut(reserved, items), &got, &records).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<PutItemRecord> many(kMaxPutItems + 1);
  EXPECT_EQ(ParsePut(EncodePut(call, many), &got, &records).code(),
            absl::StatusCode::kInvalidArgument);
  // Every item of the largest Put may carry the longest message and still fit one reply.
  EXPECT_LE(sizeof(CallReply) + kMaxPutItems * (sizeof(PutItemReply) + kMaxItemMessage),
            kMaxBodyBytes);
}

TEST(LocalWireTest, PutRepliesCarryMessagesThenRuns) {
  std::string body = EncodeCallReply(3);
  const ucx::ArenaRun runs[1] = {{8192, 100}};
  AppendPutItem(PutItemReply{}, absl::OkStatus(),
                absl::string_view(reinterpret_cast<const char*>(runs), sizeof(runs)), &body);
  AppendPutItem(PutItemReply{}, absl::ResourceExhaustedError(std::string(1000, 'q')), "", &body);
  AppendPutItem(PutItemReply{0, 0, kAlreadyPresent, 0}, absl::OkStatus(), "", &body);
  std::vector<int32_t> codes;
  std::vector<size_t> messages, run_bytes;
  std::vector<uint32_t> flags;
  absl::Status call;
  const auto collect = [&](uint32_t, const PutItemReply& r, absl::string_view m,
                           absl::string_view rs) {
    codes.push_back(r.code);
    messages.push_back(m.size());
    run_bytes.push_back(rs.size());
    flags.push_back(r.flags);
  };
  ASSERT_TRUE(ParsePutReply(body, 3, collect, &call).ok());
  EXPECT_TRUE(call.ok());
  EXPECT_EQ(codes, (std::vector<int32_t>{0, 8, 0}));
  EXPECT_EQ(messages, (std::vector<size_t>{0, kMaxItemMessage, 0}));
  EXPECT_EQ(run_bytes, (std::vector<size_t>{sizeof(runs), 0, 0}));
  EXPECT_EQ(flags, (std::vector<uint32_t>{0, 0, kAlreadyPresent}));
  const auto ignore = [](uint32_t, const PutItemReply&, absl::string_view, absl::string_view) {};
  EXPECT_EQ(ParsePutReply(body, 2, ignore, &call).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ParsePutReply(body.substr(0, body.size() - 1), 3, ignore, &call).code(),
            absl::StatusCode::kInternal);
  ASSERT_TRUE(
      ParsePutReply(EncodeCallError(absl::UnavailableError("draining")), 3, ignore, &call).ok());
  EXPECT_TRUE(absl::IsUnavailable(call)) << call;
}

TEST(LocalWireTest, HelloRepliesCarryTheArenaOrTheRefusal) {
  HelloReply fields{0, 0, 1 << 20, 4096, 5};
  HelloReply got{};
  ASSERT_TRUE(ParseHelloReply(EncodeHelloReply(absl::OkStatus(), fields), &got).ok());
  EXPECT_EQ(got.arena_bytes, 1u << 20);
  EXPECT_EQ(got.file_offset, 4096u);
  EXPECT_EQ(got.arena_id, 5u);
  EXPECT_EQ(
      ParseHelloReply(EncodeHelloReply(absl::PermissionDeniedError("untrusted"), fields), &got),
      absl::PermissionDeniedError("untrusted"));
  EXPECT_EQ(got.arena_bytes, 0u);
  EXPECT_EQ(ParseHelloReply("x", &got).code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace kvstash::wire::local
