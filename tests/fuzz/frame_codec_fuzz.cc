// Fuzzes the zero-copy frame codec (proto/frame_codec.h) with the frames a Put stream
// receives and a client's Get stream reads. Input: one byte choosing the message (bit 4:
// GetFrame, else PutFrame) and the number of slices (low nibble), then the frame bytes.
// Checks: an accepted frame agrees with protobuf's own parser, its payload size matches its
// slices, and decode -> encode -> decode gives the same head and payload.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"

namespace kvstash::fuzz {
namespace {

template <typename Frame>
void Check(absl::string_view bytes, size_t pieces) {
  Frame head;
  wire::FramePayload payload;
  if (!wire::DecodeFrame(ToBuffer(bytes, pieces), &head, &payload).ok()) return;
  const std::string data = Flatten(payload.slices);
  FUZZ_CHECK(data.size() == payload.bytes);
  FUZZ_CHECK(head.data().empty());

  Frame reference;  // protobuf reads the same bytes as one message
  FUZZ_CHECK(reference.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  FUZZ_CHECK(reference.data() == data);
  reference.clear_data();
  FUZZ_CHECK(reference.SerializeAsString() == head.SerializeAsString());

  Frame again;
  wire::FramePayload again_payload;
  const grpc::ByteBuffer encoded = wire::EncodeFrame(head, payload.slices);
  FUZZ_CHECK(wire::DecodeFrame(encoded, &again, &again_payload).ok());
  FUZZ_CHECK(again.SerializeAsString() == head.SerializeAsString());
  FUZZ_CHECK(Flatten(again_payload.slices) == data);
}

}  // namespace
}  // namespace kvstash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvstash::fuzz::QuietProtobuf();
  if (size == 0) return 0;
  const absl::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t pieces = (data[0] & 0x0f) + 1;
  if ((data[0] & 0x10) != 0) {
    kvstash::fuzz::Check<kvstash::v1::GetFrame>(bytes, pieces);
  } else {
    kvstash::fuzz::Check<kvstash::v1::PutFrame>(bytes, pieces);
  }
  return 0;
}
