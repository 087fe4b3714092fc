#include "server/grpc/put_stream.h"

#include "absl/strings/str_cat.h"

namespace kvstash::server {

absl::Status PutStreamParser::OnFrame(const grpc::ByteBuffer& frame) {
  absl::Status s = wire::DecodeFrame(frame, &head_, &payload_);
  if (!s.ok()) return s;
  if (!have_ns_ || !head_.namespace_id().empty()) {
    if (s = CheckNamespace(head_.namespace_id()); !s.ok()) return s;
  }
  if (head_.has_header()) {
    if (s = StartChunk(head_.header()); !s.ok()) return s;
  }
  if (payload_.bytes > 0) return ConsumePayload();
  return absl::OkStatus();
}

absl::Status PutStreamParser::OnEnd() const {
  if (active_) {
    return absl::InvalidArgumentError(absl::StrCat("stream ended with ", remaining_,
                                                   " bytes of chunk ", chunks_done_, " missing"));
  }
  return absl::OkStatus();
}

// The stream's first frame names the namespace; later frames may repeat it, not change it.
absl::Status PutStreamParser::CheckNamespace(const std::string& id_bytes) {
  if (have_ns_) {
    if (id_bytes != ns_) {
      return absl::InvalidArgumentError("namespace_id changed within one Put stream");
    }
    return absl::OkStatus();
  }
  if (absl::Status s = sink_->OnNamespace(id_bytes); !s.ok()) {
    if (id_bytes.empty()) {
      return absl::InvalidArgumentError("the first Put frame must carry namespace_id");
    }
    return s;
  }
  have_ns_ = true;
  ns_ = id_bytes;
  return absl::OkStatus();
}

absl::Status PutStreamParser::StartChunk(const v1::ChunkHeader& header) {
  if (active_) {
    return absl::InvalidArgumentError(absl::StrCat("header of chunk ", chunks_done_ + 1,
                                                   " arrived with ", remaining_, " bytes of chunk ",
                                                   chunks_done_, " still missing"));
  }
  PutChunkHeader h;
  h.index = chunks_done_;
  h.key = header.key();
  h.meta.size_bytes = header.size_bytes();
  h.meta.tokens = header.tokens();
  h.meta.format = header.format();
  h.meta.checksum = header.checksum();
  const v1::ChunkHints& hints = header.hints();
  h.hints.parent_key = hints.parent_key();
  h.hints.session_id = hints.session_id();
  h.hints.ttl_ms = hints.ttl_ms();
  h.hints.priority = hints.priority();
  h.hints.pin = hints.pin();
  if (absl::Status s = CheckPutChunk(h, limits_); !s.ok()) return s;
  active_ = true;
  remaining_ = h.meta.size_bytes;
  sink_->OnChunkStart(h);
  return absl::OkStatus();
}

absl::Status PutStreamParser::ConsumePayload() {
  if (payload_.bytes > limits_.max_frame_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("frame payload of ", payload_.bytes,
                                                     " bytes exceeds server.max_frame_bytes (",
                                                     limits_.max_frame_bytes, ")"));
  }
  if (!active_) {
    return absl::InvalidArgumentError("data frame outside a chunk (no header precedes it)");
  }
  if (payload_.bytes > remaining_) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", chunks_done_, ": frame carries ",
                                                   payload_.bytes, " bytes but only ", remaining_,
                                                   " remain of size_bytes"));
  }
  bytes_received_ += payload_.bytes;
  remaining_ -= payload_.bytes;
  sink_->OnChunkPayload(payload_.slices);
  payload_.slices.clear();
  if (remaining_ == 0) {
    ++chunks_done_;
    active_ = false;
    sink_->OnChunkEnd();
  }
  return absl::OkStatus();
}

}  // namespace kvstash::server
