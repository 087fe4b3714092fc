#include "proto/frame_codec.h"

#include <string>

#include "gtest/gtest.h"
#include "kvstash/v1/kvstash.pb.h"

namespace kvstash::wire {
namespace {

std::string Flatten(const grpc::ByteBuffer& buf) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buf.Dump(&slices).ok());
  std::string out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

std::string Flatten(const FramePayload& p) {
  std::string out;
  for (const auto& s : p.slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

grpc::ByteBuffer Split(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t i = 0; i < bytes.size(); i += piece) {
    slices.emplace_back(bytes.data() + i, std::min(piece, bytes.size() - i));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

v1::GetFrame SampleHead() {
  v1::GetFrame head;
  head.set_index(7);
  head.set_code(0);
  head.mutable_header()->set_key(std::string(16, '\x5a'));
  head.mutable_header()->set_size_bytes(300000);
  head.mutable_header()->set_checksum(0xfeedfacecafebeefull);
  return head;
}

TEST(FrameCodecTest, EncodedFrameIsAValidProtobufMessage) {
  std::string a(100000, 'a'), b(200000, 'b');
  grpc::Slice slices[] = {grpc::Slice(a), grpc::Slice(b)};
  grpc::ByteBuffer buf = EncodeFrame(SampleHead(), slices);
  v1::GetFrame parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(buf)));
  EXPECT_EQ(parsed.index(), 7u);
  EXPECT_EQ(parsed.header().checksum(), 0xfeedfacecafebeefull);
  EXPECT_EQ(parsed.data(), a + b);
}

TEST(FrameCodecTest, DecodesStandardSerializationAcrossSliceBoundaries) {
  v1::GetFrame msg = SampleHead();
  std::string payload;
  for (int i = 0; i < 5000; ++i) payload.push_back(static_cast<char>(i * 31));
  msg.set_data(payload);
  std::string bytes = msg.SerializeAsString();
  for (size_t piece : {1ul, 3ul, 7ul, 64ul, bytes.size()}) {
    v1::GetFrame head;
    FramePayload out;
    ASSERT_TRUE(DecodeFrame(Split(bytes, piece), &head, &out).ok()) << piece;
    EXPECT_EQ(head.index(), 7u);
    EXPECT_EQ(head.header().size_bytes(), 300000u);
    EXPECT_TRUE(head.data().empty());
    EXPECT_EQ(out.bytes, payload.size());
    EXPECT_EQ(Flatten(out), payload);
  }
}

TEST(FrameCodecTest, HeadOnlyFrameHasNoPayload) {
  grpc::ByteBuffer buf = EncodeFrame(SampleHead(), {});
  v1::GetFrame head;
  FramePayload out;
  ASSERT_TRUE(DecodeFrame(buf, &head, &out).ok());
  EXPECT_EQ(out.bytes, 0u);
  EXPECT_TRUE(out.slices.empty());
  EXPECT_EQ(head.header().key(), std::string(16, '\x5a'));
}

TEST(FrameCodecTest, RejectsTruncatedAndRepeatedPayload) {
  v1::PutFrame msg;
  msg.set_namespace_id(std::string(16, 'n'));
  msg.set_data(std::string(1000, 'x'));
  std::string bytes = msg.SerializeAsString();
  v1::PutFrame head;
  FramePayload out;
  for (size_t cut : {1ul, 5ul, 20ul, bytes.size() - 1}) {
    EXPECT_EQ(DecodeFrame(Split(bytes.substr(0, cut), 4), &head, &out).code(),
              absl::StatusCode::kInvalidArgument)
        << cut;
  }
  std::string twice = bytes + msg.data().substr(0, 0);
  v1::PutFrame extra;
  extra.set_data("yy");
  twice += extra.SerializeAsString();
  EXPECT_EQ(DecodeFrame(Split(twice, 100), &head, &out).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeFrame(Split(std::string("\x00\x01", 2), 1), &head, &out).code(),
            absl::StatusCode::kInvalidArgument);
}

// A tag whose varint holds more than 32 bits is malformed (protobuf keeps only the low 32
// bits of a tag, so it would read such a tag as another field, here the payload's).
TEST(FrameCodecTest, RefusesTagsWiderThan32Bits) {
  std::string bytes = "\xfa\x80\x80\x80\x10";  // (1 << 32) | field 15, length-delimited
  bytes +=
      "\x03"
      "abc";
  v1::PutFrame head;
  FramePayload payload;
  const absl::Status s = DecodeFrame(Split(bytes, bytes.size()), &head, &payload);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(head.data().empty());
}

// Protobuf refuses a tag encoded in more than 5 bytes, even when its value is small.
TEST(FrameCodecTest, RefusesTagsLongerThan5Bytes) {
  const std::string bytes("\x90\x80\x80\x80\x80\x00\x05", 7);  // field 2 (in 6 bytes) = 5
  v1::GetFrame head;
  FramePayload payload;
  const absl::Status s = DecodeFrame(Split(bytes, bytes.size()), &head, &payload);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_FALSE(head.ParseFromString(bytes));  // as protobuf itself
}

// Protobuf also refuses a length encoded in more than 5 bytes, for a head field as for the
// payload, even an overlong zero.
TEST(FrameCodecTest, RefusesLengthsLongerThan5Bytes) {
  for (const std::string& bytes :
       {std::string("\x32\x80\x80\x80\x80\x80\x00", 7),     // field 6, empty, in 6 bytes
        std::string("\x7a\x80\x80\x80\x80\x80\x00", 7)}) {  // the payload, the same
    v1::PutFrame head;
    FramePayload payload;
    const absl::Status s = DecodeFrame(Split(bytes, bytes.size()), &head, &payload);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_FALSE(head.ParseFromString(bytes));  // as protobuf itself
  }
}

}  // namespace
}  // namespace kvstash::wire
