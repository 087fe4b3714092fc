#include "client/grpc_streams.h"

#include <grpcpp/client_context.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/support/async_stream.h>
#include <grpcpp/support/byte_buffer.h>
// Protobuf SerializationTraits, for the small PutResponse and GetRequest messages.
#include <grpcpp/impl/codegen/proto_utils.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/grpc_call.h"
#include "client/messages.h"
#include "client/wire_convert.h"
#include "common/streaming_copy.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"
#include "proto/status_map.h"

namespace kvstash::client_internal {
namespace {

using ByteBuffer = grpc::ByteBuffer;

// Payload slices that reference caller memory and are still held anywhere inside gRPC.
// A Put returns only once none is left (or a grace period passed): the caller may free
// its buffers the moment Put returns. Each slice co-owns the count, so a slice released
// after Put gave up waiting still finds it alive.
struct SliceCount {
  absl::Mutex mu;
  int live ABSL_GUARDED_BY(mu) = 0;
};
using SliceCountPtr = std::shared_ptr<SliceCount>;

// How long a finished Put waits for gRPC to drop its last references to caller memory.
// Normally they are gone when the call's context is destroyed; only bytes stuck in a
// socket to a peer that stopped reading can take longer, and waiting for those would
// hold the caller past its deadline indefinitely.
constexpr absl::Duration kSliceReleaseGrace = absl::Seconds(2);

void ReleaseCallerBytes(void* hold) {
  std::unique_ptr<SliceCountPtr> owner(static_cast<SliceCountPtr*>(hold));
  absl::MutexLock lock(&(*owner)->mu);  // released before `owner` drops its reference
  --(*owner)->live;
}

grpc::Slice WrapCallerBytes(const SliceCountPtr& count, const void* data, size_t len) {
  {
    absl::MutexLock lock(&count->mu);
    ++count->live;
  }
  // gRPC never writes through the pointer; the slice API simply is not const.
  return grpc::Slice(const_cast<void*>(data), len, &ReleaseCallerBytes, new SliceCountPtr(count));
}

bool WaitAllReleased(SliceCount* count, absl::Duration grace) {
  absl::MutexLock lock(&count->mu);
  return count->mu.AwaitWithTimeout(absl::Condition(
                                        +[](int* live) { return *live == 0; }, &count->live),
                                    grace);
}

// One Put call. Frames are written one at a time while a read waits for the single
// PutResponse; Finish is issued once both directions are over.
// Thread-compatible: lives on the calling thread's stack.
class PutStream final : private PumpedCall {
 public:
  PutStream(const Key128& ns, absl::Span<PutItem> items, absl::Span<const uint64_t> checksums,
            uint32_t frame_bytes)
      : PumpedCall(ThreadQueue()),
        ns_(ns),
        items_(items),
        checksums_(checksums),
        frame_bytes_(frame_bytes) {}

  absl::Status Run(grpc::GenericStub* stub, const CallContext& ctx) {
    auto context = std::make_unique<grpc::ClientContext>();
    ApplyCallContext(ctx, context.get());
    std::unique_ptr<AsyncStream> call = Open(stub, context.get(), kPutMethod);
    Drive(call.get());
    // The context holds the last reference to the core call, and a call cut short keeps
    // its unsent frame until it is destroyed; then our own reference to the last frame.
    call.reset();
    context.reset();
    frame_.Clear();
    WaitAllReleased(slices_.get(), kSliceReleaseGrace);
    return Finish();
  }

 private:
  void Drive(AsyncStream* call) {
    call->Read(&response_, TagOf(StreamOp::kRead));
    Issued();
    if (items_.empty()) {
      call->WritesDone(TagOf(StreamOp::kWrite));
      Issued();
    } else {
      WriteNextFrame(call);
    }
    while (Pending()) {
      bool ok = false;
      switch (Wait(&ok)) {
        case StreamOp::kWrite:
          // A failed write, or an answer before the last frame, means the stream is over.
          if (ok && !read_over_) {
            WriteNextFrame(call);
          } else {
            writes_over_ = true;
          }
          break;
        case StreamOp::kRead:
          got_response_ = ok;
          read_over_ = true;
          break;
        case StreamOp::kFinish:
          break;
      }
      if (writes_over_ && read_over_ && !finish_issued_) {
        call->Finish(&status_, TagOf(StreamOp::kFinish));
        Issued();
        finish_issued_ = true;
      }
    }
  }

  void WriteNextFrame(AsyncStream* call) {
    if (item_ == items_.size()) {  // the last frame went out marked last
      writes_over_ = true;
      return;
    }
    frame_ = NextFrame();
    grpc::WriteOptions options;
    if (item_ == items_.size()) options.set_last_message();
    call->Write(frame_, options, TagOf(StreamOp::kWrite));
    Issued();
  }

  // The frame at the current position: a chunk's header frame (with its first payload
  // bytes) or a data-only frame; advances the position past it.
  ByteBuffer NextFrame() {
    const PutItem& item = items_[item_];
    v1::PutFrame head;
    if (first_frame_) head.set_namespace_id(KeyToBytes(ns_));
    first_frame_ = false;
    if (offset_ == 0 && !header_sent_) {
      v1::ChunkHeader* h = head.mutable_header();
      h->set_key(KeyToBytes(item.key));
      h->set_size_bytes(item.size);
      h->set_tokens(item.tokens);
      h->set_format(item.format);
      h->set_checksum(checksums_[item_]);
      if (HasHints(item.hints)) *h->mutable_hints() = HintsToProto(item.hints);
      header_sent_ = true;
    }
    size_t n = std::min<size_t>(frame_bytes_, item.size - offset_);
    ByteBuffer frame;
    if (n == 0) {
      frame = wire::EncodeFrame(head, {});
    } else {
      grpc::Slice payload =
          WrapCallerBytes(slices_, static_cast<const uint8_t*>(item.data) + offset_, n);
      frame = wire::EncodeFrame(head, absl::MakeConstSpan(&payload, 1));
    }
    offset_ += n;
    if (offset_ == item.size) {
      ++item_;
      offset_ = 0;
      header_sent_ = false;
    }
    return frame;
  }

  absl::Status Finish() {
    if (!status_.ok()) return wire::FromGrpcStatus(status_);
    v1::PutResponse resp;
    if (!got_response_ ||
        !grpc::SerializationTraits<v1::PutResponse>::Deserialize(&response_, &resp).ok()) {
      return absl::InternalError("Put stream ended without a readable PutResponse");
    }
    if (static_cast<size_t>(resp.results_size()) != items_.size()) {
      return absl::InternalError(absl::StrCat("PutResponse has ", resp.results_size(),
                                              " results for ", items_.size(), " chunks"));
    }
    for (size_t i = 0; i < items_.size(); ++i) {
      const v1::ChunkResult& r = resp.results(static_cast<int>(i));
      items_[i].status = wire::FromCode(r.code(), r.message());
      items_[i].already_present = r.already_present();
    }
    return absl::OkStatus();
  }

  const Key128 ns_;
  const absl::Span<PutItem> items_;
  const absl::Span<const uint64_t> checksums_;  // 0: the daemon computes it
  const uint32_t frame_bytes_;
  const SliceCountPtr slices_ = std::make_shared<SliceCount>();
  // Write position: next chunk, next byte within it, whether its header went out.
  size_t item_ = 0;
  size_t offset_ = 0;
  bool header_sent_ = false;
  bool first_frame_ = true;
  ByteBuffer frame_;     // the write in flight
  ByteBuffer response_;  // the single PutResponse
  bool got_response_ = false;
  bool writes_over_ = false;
  bool read_over_ = false;
  bool finish_issued_ = false;
  grpc::Status status_;
};

// One Get call: a single request, then frames consumed as they arrive, one read in
// flight at a time. Thread-compatible: lives on the calling thread's stack.
class GetStream final : private PumpedCall {
 public:
  explicit GetStream(absl::Span<GetItem> items)
      : PumpedCall(ThreadQueue()), items_(items), answered_(items.size(), false) {}

  absl::Status Run(grpc::GenericStub* stub, const CallContext& ctx, const Key128& ns,
                   uint64_t lease_id) {
    v1::GetRequest req;
    req.set_namespace_id(KeyToBytes(ns));
    std::vector<Key128> keys;
    keys.reserve(items_.size());
    for (const GetItem& item : items_) keys.push_back(item.key);
    req.set_keys(KeysToBytes(keys));
    req.set_lease_id(lease_id);
    bool own = false;
    grpc::Status s = grpc::SerializationTraits<v1::GetRequest>::Serialize(req, &request_, &own);
    if (!s.ok()) return wire::FromGrpcStatus(s);
    ApplyCallContext(ctx, &context_);
    std::unique_ptr<AsyncStream> call = Open(stub, &context_, kGetMethod);
    Drive(call.get());
    return Finish();
  }

 private:
  void Drive(AsyncStream* call) {
    call->Write(request_, grpc::WriteOptions().set_last_message(), TagOf(StreamOp::kWrite));
    Issued();
    call->Read(&frame_, TagOf(StreamOp::kRead));
    Issued();
    bool reads_over = false;
    bool finish_issued = false;
    while (Pending()) {
      bool ok = false;
      if (Wait(&ok) == StreamOp::kRead) {
        if (ok && OnFrame()) {
          call->Read(&frame_, TagOf(StreamOp::kRead));
          Issued();
        } else {
          reads_over = true;  // end of stream, broken, or cancelled for a protocol error
        }
      }
      if (reads_over && !finish_issued) {
        call->Finish(&status_, TagOf(StreamOp::kFinish));
        Issued();
        finish_issued = true;
      }
    }
  }

  // Consumes the frame just read; false cancels the call after a protocol error.
  bool OnFrame() {
    absl::Status s = Consume();
    if (s.ok()) return true;
    protocol_error_ = s;
    context_.TryCancel();
    return false;
  }

  absl::Status Consume() {
    v1::GetFrame head;
    wire::FramePayload payload;
    if (absl::Status s = wire::DecodeFrame(frame_, &head, &payload); !s.ok()) return s;
    frame_.Clear();
    if (head.has_header() || head.code() != 0) {
      if (absl::Status s = StartChunk(head); !s.ok()) return s;
    }
    if (payload.bytes == 0) return absl::OkStatus();
    if (payload.bytes > remaining_) {
      return absl::InternalError(absl::StrCat(
          "Get stream: ", payload.bytes, " payload bytes where ", remaining_, " were expected"));
    }
    for (const grpc::Slice& slice : payload.slices) {
      if (dest_ != nullptr) {
        CopyBytes(dest_, slice.begin(), slice.size());
        dest_ += slice.size();
      }
    }
    remaining_ -= payload.bytes;
    if (remaining_ == 0 && dest_ != nullptr) items_[current_].status = absl::OkStatus();
    return absl::OkStatus();
  }

  // A frame that opens the answer for one requested key.
  absl::Status StartChunk(const v1::GetFrame& head) {
    if (remaining_ > 0) {
      return absl::InternalError(
          absl::StrCat("Get stream: chunk ", current_, " cut short by ", remaining_, " bytes"));
    }
    size_t index = head.index();
    if (index >= items_.size() || answered_[index]) {
      return absl::InternalError(absl::StrCat("Get stream: bad or repeated index ", index));
    }
    GetItem& item = items_[index];
    if (!head.header().key().empty() && head.header().key() != KeyToBytes(item.key)) {
      return absl::InternalError(absl::StrCat("Get stream: index ", index, " answers another key"));
    }
    answered_[index] = true;
    current_ = index;
    dest_ = nullptr;
    if (head.code() != 0) {
      item.status = GetChunkError(item.key, head.code(), "");
      return absl::OkStatus();
    }
    const v1::ChunkHeader& h = head.header();
    remaining_ = h.size_bytes();
    // A chunk too large for its buffer still arrives; its payload is skipped.
    if (!AcceptGetChunk(ChunkMeta{h.size_bytes(), h.tokens(), h.format(), h.checksum()}, &item)) {
      return absl::OkStatus();
    }
    dest_ = static_cast<uint8_t*>(item.data);
    item.status =
        remaining_ == 0 ? absl::OkStatus() : absl::DataLossError("chunk payload incomplete");
    return absl::OkStatus();
  }

  absl::Status Finish() {
    if (!protocol_error_.ok()) return protocol_error_;
    if (!status_.ok()) return wire::FromGrpcStatus(status_);
    if (remaining_ > 0) {
      return absl::InternalError(absl::StrCat("Get stream ended ", remaining_,
                                              " bytes before the end of chunk ", current_));
    }
    for (size_t i = 0; i < items_.size(); ++i) {
      if (!answered_[i]) {
        return absl::InternalError(
            absl::StrCat("Get stream ended without an answer for key ", i, " of ", items_.size()));
      }
    }
    return absl::OkStatus();
  }

  const absl::Span<GetItem> items_;
  std::vector<bool> answered_;
  grpc::ClientContext context_;
  ByteBuffer request_;
  ByteBuffer frame_;  // the read in flight
  // The chunk being received: its index, where its next bytes go (null: skipped), and
  // how many bytes are still due.
  size_t current_ = 0;
  uint8_t* dest_ = nullptr;
  uint64_t remaining_ = 0;
  absl::Status protocol_error_;
  grpc::Status status_;
};

}  // namespace

absl::Status RunPutStream(grpc::GenericStub* stub, const CallContext& ctx, const Key128& ns,
                          absl::Span<PutItem> items, absl::Span<const uint64_t> checksums,
                          uint32_t frame_bytes) {
  ResetPutResults(items);
  PutStream stream(ns, items, checksums, frame_bytes);
  return stream.Run(stub, ctx);
}

absl::Status RunGetStream(grpc::GenericStub* stub, const CallContext& ctx, const Key128& ns,
                          absl::Span<GetItem> items, uint64_t lease_id) {
  ResetGetResults(items);
  GetStream stream(items);
  return stream.Run(stub, ctx, ns, lease_id);
}

}  // namespace kvstash::client_internal
