#include "server/grpc/get_reactor.h"

#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"
#include "proto/status_map.h"
#include "server/grpc/grpc_auth.h"

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
// payload bytes) and then data frames until the chunk's bytes are all out. While one chunk
// is being sent the next key's chunk is already fetched (read ahead by one), so an NVMe
// read overlaps the send of the chunk before it.
class GetReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  GetReactor(const Requests* requests, DeliveryGate* delivery, grpc::CallbackServerContext* context,
             const grpc::ByteBuffer* request)
      : requests_(requests),
        delivery_(delivery),
        env_(&requests->env()),
        metrics_(&requests->metrics()),
        context_(context) {
    metrics_->CallStarted();
    metrics_->AddReceivedBytes(request->Length());
    absl::Status s = Parse(*context, *request);
    if (!s.ok()) {
      requests_->LogRefused(Op::kGet, s, context_->peer());
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
    metrics_->CallEnded();
    const auto code = static_cast<absl::StatusCode>(code_);
    if (call_ != nullptr) {
      call_->End(code);
    } else {  // refused before it began
      requests_->RecordCall(Op::kGet, code, start_);
    }
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      if (fetching_) return;  // the fetch's callback deletes the reactor
    }
    delete this;
  }

 private:
  using Fetched = absl::StatusOr<storage::ChunkRef>;

  // Finishes the call, remembering its code for the metrics.
  void End(const grpc::Status& status) {
    code_ = static_cast<int>(status.error_code());
    Finish(status);
  }
  absl::Status Parse(const grpc::CallbackServerContext& context, const grpc::ByteBuffer& request);
  void WriteNext();
  // Starts fetching keys_[next_fetch_] when there is one (an NVMe read runs on the store's
  // read threads). Called with no write waiting on the fetch.
  void FetchAhead();
  void OnFetched(Fetched ref);
  // Sends the head frame of the next key's chunk and starts fetching the one after it.
  void SendNextChunk(Fetched ref);
  void BuildHeadFrame(uint32_t index, Fetched ref);
  void Send();
  std::vector<grpc::Slice> TakePayload();

  const Requests* const requests_;
  DeliveryGate* const delivery_;
  const ServiceEnv* const env_;
  TransportMetrics* const metrics_;
  grpc::CallbackServerContext* const context_;
  const TransportMetrics::Clock::time_point start_ = TransportMetrics::Clock::now();
  int code_ = 0;
  std::shared_ptr<ActiveGet> call_;  // holds the caller's call slot until the reactor goes
  std::vector<Key128> keys_;
  size_t next_send_ = 0;   // index of the next chunk to send
  size_t next_fetch_ = 0;  // index of the next key to fetch
  uint64_t bytes_sent_ = 0;

  // The chunk being sent: its reference, the read position and the bytes still to send.
  storage::ChunkRef chunk_;
  size_t segment_ = 0;
  size_t segment_offset_ = 0;
  uint64_t left_ = 0;

  grpc::ByteBuffer out_;  // the frame in flight; gRPC holds it until OnWriteDone

  // The fetch ahead. Its callback runs on a read thread, or inline within GetAsync.
  absl::Mutex mu_;
  bool fetching_ ABSL_GUARDED_BY(mu_) = false;         // a GetAsync has not called back yet
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;          // the next send waits for that callback
  bool done_ ABSL_GUARDED_BY(mu_) = false;             // OnDone ran: the callback deletes
  std::optional<Fetched> ahead_ ABSL_GUARDED_BY(mu_);  // fetched, not yet sent
};

absl::Status GetReactor::Parse(const grpc::CallbackServerContext& context,
                               const grpc::ByteBuffer& request) {
  if (absl::Status s = requests_->Admit(); !s.ok()) return s;
  absl::StatusOr<CallAuth> caller = AuthenticateCall(*requests_, Op::kGet, context);
  if (!caller.ok()) return caller.status();
  v1::GetRequest parsed;
  if (absl::Status s = wire::ParseMessage(request, &parsed); !s.ok()) return s;
  absl::StatusOr<std::vector<Key128>> keys = requests_->ParseKeys(parsed.keys());
  if (!keys.ok()) return keys.status();
  absl::StatusOr<std::shared_ptr<ActiveGet>> call =
      requests_->BeginGet(*caller, parsed.namespace_id(), keys->size(), parsed.lease_id(), start_);
  if (!call.ok()) return call.status();
  call_ = *std::move(call);
  keys_ = *std::move(keys);
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
    Send();
    return;
  }
  if (next_send_ == keys_.size()) {
    env_->log->Debug("get done", {{"keys", keys_.size()}, {"bytes", bytes_sent_}});
    if (delivery_ == nullptr) {
      End(grpc::Status::OK);
    } else {
      delivery_->Await(context_->peer(), [this] { End(grpc::Status::OK); });
    }
    return;
  }
  if (next_fetch_ == next_send_) FetchAhead();  // the first key
  std::optional<Fetched> ready;
  {
    absl::MutexLock lock(&mu_);
    if (!ahead_.has_value()) {
      waiting_ = true;  // OnFetched sends it
      return;
    }
    ready.swap(ahead_);
  }
  SendNextChunk(std::move(*ready));
}

void GetReactor::Send() {
  metrics_->AddSentBytes(out_.Length());
  StartWrite(&out_);
}

void GetReactor::FetchAhead() {
  if (next_fetch_ == keys_.size()) return;
  {
    absl::MutexLock lock(&mu_);
    fetching_ = true;
  }
  // The callback may run after the call ended and the service (env_) is gone, while the
  // store drains its reads: it touches only this reactor.
  call_->Fetch(keys_[next_fetch_++], [this](Fetched ref) { OnFetched(std::move(ref)); });
}

void GetReactor::OnFetched(Fetched ref) {
  bool send = false;
  bool ended = false;
  {
    absl::MutexLock lock(&mu_);
    fetching_ = false;
    if (done_) {
      ended = true;  // the call ended while the read ran
    } else if (waiting_) {
      waiting_ = false;
      send = true;
    } else {
      ahead_ = std::move(ref);
    }
  }
  if (ended) {
    delete this;
  } else if (send) {
    SendNextChunk(std::move(ref));
  }
}

void GetReactor::SendNextChunk(Fetched ref) {
  BuildHeadFrame(static_cast<uint32_t>(next_send_++), std::move(ref));
  FetchAhead();  // may call back inline (a DRAM hit): it only parks the result
  Send();
}

void GetReactor::BuildHeadFrame(uint32_t index, Fetched ref) {
  v1::GetFrame head;
  head.set_index(index);
  v1::ChunkHeader* header = head.mutable_header();
  header->set_key(KeyToBytes(keys_[index]));
  ref = call_->Serve(std::move(ref));
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

grpc::ServerWriteReactor<grpc::ByteBuffer>* NewGetReactor(const Requests* requests,
                                                          DeliveryGate* delivery,
                                                          grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* request) {
  return new GetReactor(requests, delivery, context, request);
}

}  // namespace kvstash::server
