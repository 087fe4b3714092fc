// PutStreamParser: the grammar of the streamed Put call (docs/protocol.md, "Put") apart
// from what is done with the chunks. Frames arrive one after another; the first names the
// namespace, a frame with a header starts a chunk, and payload bytes fill the active chunk
// until its size_bytes arrived. The parser enforces every rule of that grammar and the
// chunk rules of request_rules.h, and hands the owner (a PutStreamSink) the namespace, each
// chunk's header, its payload slices and its end. Keeping it apart from the gRPC reactor
// lets the decoder of this untrusted input be tested and fuzzed without a daemon.
//
// Thread-safety: not thread-safe; owned by one Put call, one frame at a time.
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"
#include "server/request_rules.h"

namespace kvstash::server {

// What the owner of a Put stream does with what the parser decoded.
class PutStreamSink {
 public:
  virtual ~PutStreamSink() = default;
  // The stream's namespace id, as its first frame carried it (maybe empty or not 16
  // bytes). An error ends the call.
  virtual absl::Status OnNamespace(absl::string_view id) = 0;
  // A chunk starts; CheckPutChunk accepted `header`, whose views live until the next frame.
  virtual void OnChunkStart(const PutChunkHeader& header) = 0;
  // The next payload bytes of the active chunk, in order.
  virtual void OnChunkPayload(absl::Span<const grpc::Slice> slices) = 0;
  // The active chunk's size_bytes all arrived.
  virtual void OnChunkEnd() = 0;
};

class PutStreamParser {
 public:
  // `sink` must outlive the parser.
  PutStreamParser(const ServiceLimits& limits, PutStreamSink* sink)
      : limits_(limits), sink_(sink) {}

  // Decodes one frame and hands its parts to the sink. An error ends the call.
  absl::Status OnFrame(const grpc::ByteBuffer& frame);
  // The client closed its side: INVALID_ARGUMENT while a chunk still misses bytes.
  absl::Status OnEnd() const;

  // Chunks whose bytes all arrived.
  uint32_t chunks_done() const { return chunks_done_; }
  // Payload bytes accepted so far.
  uint64_t bytes_received() const { return bytes_received_; }

 private:
  absl::Status CheckNamespace(const std::string& id_bytes);
  absl::Status StartChunk(const v1::ChunkHeader& header);
  absl::Status ConsumePayload();

  const ServiceLimits limits_;
  PutStreamSink* const sink_;

  v1::PutFrame head_;
  wire::FramePayload payload_;
  bool have_ns_ = false;
  std::string ns_;  // the namespace id the first frame named
  uint32_t chunks_done_ = 0;
  uint64_t bytes_received_ = 0;
  // The active chunk: from its header until size_bytes payload bytes have arrived.
  bool active_ = false;
  uint64_t remaining_ = 0;
};

}  // namespace kvstash::server
