#include "proto/ucx_wire.h"

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace kvstash::wire::ucx {
namespace {

// A Put's AM header with `hints` after its PutFields.
std::string PutHeader(uint16_t flags, const PutHintsFields& hints) {
  RequestHeader h = MakeRequestHeader(Op::kPut, 1, nullptr);
  h.flags = flags;
  PutFields f{};
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(reinterpret_cast<const char*>(&f), sizeof(f));
  out.append(reinterpret_cast<const char*>(&hints), sizeof(hints));
  return out;
}

TEST(UcxWireTest, PutHintsAreReadOnlyWithTheirFlag) {
  PutHintsFields sent{};
  sent.session_id = 7;
  sent.hint_flags = kHintPin;
  PutHintsFields got;
  ASSERT_TRUE(ReadPutHints(PutHeader(kFlagPutHints, sent).data(), kFlagPutHints, &got).ok());
  EXPECT_EQ(got.session_id, 7u);
  EXPECT_EQ(got.hint_flags, kHintPin);
  ASSERT_TRUE(ReadPutHints(PutHeader(0, sent).data(), 0, &got).ok());
  EXPECT_EQ(got.session_id, 0u);
}

TEST(UcxWireTest, PutHintsRefuseUnknownFlagsAndReservedBytes) {
  PutHintsFields sent{};
  sent.hint_flags = 0x80;
  PutHintsFields got;
  EXPECT_EQ(ReadPutHints(PutHeader(kFlagPutHints, sent).data(), kFlagPutHints, &got).code(),
            absl::StatusCode::kInvalidArgument);
  sent.hint_flags = 0;
  sent.reserved = 1;
  EXPECT_EQ(ReadPutHints(PutHeader(kFlagPutHints, sent).data(), kFlagPutHints, &got).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(UcxWireTest, GetBodyMustHoldOneRecordPerKey) {
  EXPECT_EQ(CheckGetBody(GetFields{0, 0, 0}, 0).message(), "Get names no keys");
  EXPECT_TRUE(CheckGetBody(GetFields{0, 2, 0}, 2 * sizeof(GetItemRecord)).ok());
  EXPECT_EQ(CheckGetBody(GetFields{0, 2, 0}, 47).code(), absl::StatusCode::kInvalidArgument);
}

TEST(UcxWireTest, AttachBodyIsTokenThenAddress) {
  const uint64_t token = 0x1122334455667788;
  std::string body(reinterpret_cast<const char*>(&token), sizeof(token));
  uint64_t got = 0;
  absl::string_view address;
  EXPECT_FALSE(ParseAttachBody(body, &got, &address).ok());  // no address
  body += "addr";
  ASSERT_TRUE(ParseAttachBody(body, &got, &address).ok());
  EXPECT_EQ(got, token);
  EXPECT_EQ(address, "addr");
}

}  // namespace
}  // namespace kvstash::wire::ucx
