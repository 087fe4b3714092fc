// Zero-copy framing of the streamed Put and Get calls.
//
// PutFrame and GetFrame carry their payload in field 15 (`bytes data`). Encoding a frame
// as "serialized head fields" + "field 15 header" + "payload bytes" is a valid protobuf
// message, so any gRPC client can use the generated types; kvstash itself builds and
// parses frames here so payload bytes are referenced, never copied, by the codec.
//
// Thread-safety: stateless functions; safe from any thread.
#pragma once

#include <google/protobuf/message_lite.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace kvstash::wire {

// Field number of the payload in PutFrame and GetFrame.
inline constexpr int kDataField = 15;

// Returns the frame: `head` serialized (REQUIRES: its data field is empty) followed by
// the data field holding the concatenation of `payload`, which is referenced, not copied.
grpc::ByteBuffer EncodeFrame(const google::protobuf::MessageLite& head,
                             absl::Span<const grpc::Slice> payload);

// The payload of a decoded frame: slices that share the received buffer's memory.
struct FramePayload {
  std::vector<grpc::Slice> slices;
  size_t bytes = 0;
};

// Parses every field of `frame` except the payload into `head`, and returns the payload
// slices in `payload`. INVALID_ARGUMENT for malformed wire bytes or a repeated data field.
absl::Status DecodeFrame(const grpc::ByteBuffer& frame, google::protobuf::MessageLite* head,
                         FramePayload* payload);

// Parses a whole serialized message held in `buffer` (raw methods receive bytes).
// INVALID_ARGUMENT for an unreadable buffer or malformed message.
absl::Status ParseMessage(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* msg);
// Serializes `msg` into a buffer for a raw method's response.
grpc::ByteBuffer SerializeMessage(const google::protobuf::MessageLite& msg);

}  // namespace kvstash::wire
