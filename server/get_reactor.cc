#include "server/get_reactor.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"
#include "proto/status_map.h"

namespace kvstash::server {
namespace {

void DeleteChunkRef(void* ref) { delete static_cast<storage::ChunkRef*>(ref); }

// A slice over `size` stored bytes that keeps the chunk alive until gRPC drops the slice.
grpc::Slice StoredSlice(const storage::ChunkRef& chunk, const uint8_t* data, size_t size) {
  // gRPC only reads the bytes; its slice API is not const-qualified.
  return grpc::Slice(const_cast<uint8_t*>(data), size, &DeleteChunkRef,
                     new storage::ChunkRef(chunk));
}

// Sends, for each requested key in order, a head frame (index, code, header and the first
// payload bytes) and then data frames until the chunk's bytes are all out.
class GetReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  GetReactor(const ServiceEnv* env, grpc::CallbackServerContext* context,
             const grpc::ByteBuffer* request)
      : env_(env), context_(context) {
    env_->metrics.CallStarted();
    env_->metrics.AddReceivedBytes(request->Length());
    absl::Status s = Parse(*request);
    if (!s.ok()) {
      env_->log->Debug("get refused", {{"status", s}, {"peer", context_->peer()}});
      End(wire::ToGrpcStatus(s));
      return;
    }
    WriteNext();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {  // the client is gone or the call was cancelled
      chunk_.reset();
      End(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    WriteNext();
  }

  void OnDone() override {
    env_->metrics.CallEnded();
    env_->metrics.RecordCall(Op::kGet, code_, start_);
    delete this;
  }

 private:
  // Finishes the call, remembering its code for the metrics.
  void End(const grpc::Status& status) {
    code_ = static_cast<int>(status.error_code());
    Finish(status);
  }
  absl::Status Parse(const grpc::ByteBuffer& request);
  void WriteNext();
  // Fetches the next key's chunk (an NVMe read runs on the store's read threads), then
  // sends its head frame from whichever thread the chunk arrives on.
  void FetchNext();
  void BuildHeadFrame(uint32_t index, absl::StatusOr<storage::ChunkRef> ref);
  void Send();
  std::vector<grpc::Slice> TakePayload();

  const ServiceEnv* const env_;
  grpc::CallbackServerContext* const context_;
  const TransportMetrics::Clock::time_point start_ = TransportMetrics::Clock::now();
  int code_ = 0;

  storage::ChunkId id_;  // ns fixed; key of the chunk being sent
  std::vector<Key128> keys_;
  uint64_t lease_id_ = 0;
  size_t next_key_ = 0;
  uint64_t bytes_sent_ = 0;

  // The chunk being sent: its reference, the read position and the bytes still to send.
  storage::ChunkRef chunk_;
  size_t segment_ = 0;
  size_t segment_offset_ = 0;
  uint64_t left_ = 0;

  grpc::ByteBuffer out_;  // the frame in flight; gRPC holds it until OnWriteDone
};

absl::Status GetReactor::Parse(const grpc::ByteBuffer& request) {
  if (absl::Status s = env_->Admit(); !s.ok()) return s;
  v1::GetRequest req;
  if (absl::Status s = ParseMessage(request, &req); !s.ok()) return s;
  absl::StatusOr<Key128> ns = env_->registry->Resolve(req.namespace_id());
  if (!ns.ok()) return ns.status();
  absl::StatusOr<std::vector<Key128>> keys =
      ParseKeys(req.keys(), env_->limits.max_keys_per_request);
  if (!keys.ok()) return keys.status();
  id_.ns = *ns;
  keys_ = std::move(*keys);
  lease_id_ = req.lease_id();
  return absl::OkStatus();
}

void GetReactor::WriteNext() {
  if (context_->IsCancelled()) {
    chunk_.reset();
    End(grpc::Status::CANCELLED);
    return;
  }
  if (chunk_ != nullptr) {
    v1::GetFrame head;  // data frames carry only the payload
    out_ = wire::EncodeFrame(head, TakePayload());
  } else if (next_key_ < keys_.size()) {
    FetchNext();
    return;
  } else {
    env_->log->Debug("get done", {{"keys", keys_.size()}, {"bytes", bytes_sent_}});
    if (env_->delivery == nullptr) {
      End(grpc::Status::OK);
    } else {
      env_->delivery->Await(context_->peer(), [this] { End(grpc::Status::OK); });
    }
    return;
  }
  Send();
}

void GetReactor::Send() {
  env_->metrics.AddSentBytes(out_.Length());
  StartWrite(&out_);
}

void GetReactor::FetchNext() {
  const auto index = static_cast<uint32_t>(next_key_++);
  id_.key = keys_[index];
  // No write is in flight, so nothing else touches this reactor until the callback runs.
  env_->store->GetAsync(id_, [this, index](absl::StatusOr<storage::ChunkRef> ref) {
    // The reference now protects the bytes, so the lease's hold has done its job.
    if (lease_id_ != 0) env_->store->ReleaseLease(lease_id_, id_);
    BuildHeadFrame(index, std::move(ref));
    Send();
  });
}

void GetReactor::BuildHeadFrame(uint32_t index, absl::StatusOr<storage::ChunkRef> ref) {
  v1::GetFrame head;
  head.set_index(index);
  v1::ChunkHeader* header = head.mutable_header();
  header->set_key(reinterpret_cast<const char*>(id_.key.data()), id_.key.size());
  if (!ref.ok()) {
    head.set_code(static_cast<int>(ref.status().code()));
    out_ = wire::EncodeFrame(head, {});
    return;
  }
  const storage::ChunkMeta& meta = (*ref)->meta();
  header->set_size_bytes(meta.size_bytes);
  header->set_tokens(meta.tokens);
  header->set_format(meta.format);
  header->set_checksum((*ref)->checksum());
  chunk_ = std::move(*ref);
  segment_ = 0;
  segment_offset_ = 0;
  left_ = meta.size_bytes;
  out_ = wire::EncodeFrame(head, TakePayload());
}

// Up to send_frame_bytes of the current chunk, as slices over the stored segments.
std::vector<grpc::Slice> GetReactor::TakePayload() {
  std::vector<grpc::Slice> slices;
  uint64_t budget = env_->limits.send_frame_bytes;
  absl::Span<const storage::Segment> segments = chunk_->segments();
  while (budget > 0 && left_ > 0 && segment_ < segments.size()) {
    const storage::Segment& seg = segments[segment_];
    const size_t take = std::min<uint64_t>(budget, seg.size - segment_offset_);
    if (take > 0) slices.push_back(StoredSlice(chunk_, seg.data + segment_offset_, take));
    segment_offset_ += take;
    budget -= take;
    left_ -= std::min<uint64_t>(left_, take);
    bytes_sent_ += take;
    if (segment_offset_ == seg.size) {
      ++segment_;
      segment_offset_ = 0;
    }
  }
  if (left_ == 0 || segment_ >= segments.size()) chunk_.reset();
  return slices;
}

}  // namespace

grpc::ServerWriteReactor<grpc::ByteBuffer>* NewGetReactor(const ServiceEnv* env,
                                                          grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* request) {
  return new GetReactor(env, context, request);
}

}  // namespace kvstash::server
