#include "server/put_reactor.h"

#include <cstring>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"
#include "proto/status_map.h"
#include "server/grpc_service.h"

namespace kvstash::server {
namespace {

// Receives chunks one after another. A chunk is "active" from its header frame until
// size_bytes payload bytes have arrived; while active its bytes go into `chunk_`, or are
// discarded when the chunk was refused (its result is already decided) or already present.
class PutReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  PutReactor(const Requests* requests, grpc::CallbackServerContext* context,
             grpc::ByteBuffer* response)
      : requests_(requests),
        metrics_(&requests->metrics()),
        context_(context),
        response_(response) {
    metrics_->CallStarted();
    absl::Status s = requests_->Admit();
    if (s.ok()) {
      absl::StatusOr<CallAuth> caller = AuthenticateCall(*requests_, Op::kPut, *context);
      if (caller.ok()) caller_ = *std::move(caller);
      s = caller.status();
    }
    if (!s.ok()) {
      requests_->LogRefused(Op::kPut, s, context_->peer());
      End(wire::ToGrpcStatus(s));
      return;
    }
    StartRead(&frame_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      OnStreamEnd();
      return;
    }
    metrics_->AddReceivedBytes(frame_.Length());
    absl::Status s = HandleFrame();
    frame_.Clear();
    if (!s.ok()) {
      EndWithError(s);
      return;
    }
    StartRead(&frame_);
  }

  void OnDone() override {
    metrics_->CallEnded();
    requests_->RecordCall(Op::kPut, static_cast<absl::StatusCode>(code_), start_);
    delete this;
  }

 private:
  // Finishes the call, remembering its code for the metrics.
  void End(const grpc::Status& status) {
    code_ = static_cast<int>(status.error_code());
    Finish(status);
  }
  absl::Status HandleFrame();
  absl::Status CheckNamespace(const std::string& id_bytes);
  absl::Status StartChunk(const v1::ChunkHeader& header);
  absl::Status ConsumePayload();
  void CompleteChunk();
  void OnStreamEnd();
  void EndWithError(const absl::Status& s);

  const Requests* const requests_;
  TransportMetrics* const metrics_;
  grpc::CallbackServerContext* const context_;
  grpc::ByteBuffer* const response_;
  const TransportMetrics::Clock::time_point start_ = TransportMetrics::Clock::now();
  int code_ = 0;
  CallAuth caller_;  // its call slot is held until the reactor is deleted

  grpc::ByteBuffer frame_;
  v1::PutFrame head_;
  wire::FramePayload payload_;
  std::optional<Key128> ns_;
  v1::PutResponse results_;
  uint64_t bytes_received_ = 0;

  // The active chunk; its payload is discarded while chunk_.pending() is null.
  bool active_ = false;
  uint64_t remaining_ = 0;
  PutChunk chunk_;
};

absl::Status PutReactor::HandleFrame() {
  absl::Status s = wire::DecodeFrame(frame_, &head_, &payload_);
  if (!s.ok()) return s;
  if (!ns_.has_value() || !head_.namespace_id().empty()) {
    if (s = CheckNamespace(head_.namespace_id()); !s.ok()) return s;
  }
  if (head_.has_header()) {
    if (s = StartChunk(head_.header()); !s.ok()) return s;
  }
  if (payload_.bytes > 0) return ConsumePayload();
  return absl::OkStatus();
}

// The stream's first frame names the namespace; later frames may repeat it, not change it.
absl::Status PutReactor::CheckNamespace(const std::string& id_bytes) {
  if (ns_.has_value()) {
    const absl::string_view current(reinterpret_cast<const char*>(ns_->data()), ns_->size());
    if (id_bytes != current) {
      return absl::InvalidArgumentError("namespace_id changed within one Put stream");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<Key128> id = requests_->ResolveNamespace(caller_, id_bytes, auth::Access::kWrite);
  if (!id.ok()) {
    if (id_bytes.empty()) {
      return absl::InvalidArgumentError("the first Put frame must carry namespace_id");
    }
    return id.status();
  }
  ns_ = *id;
  return absl::OkStatus();
}

absl::Status PutReactor::StartChunk(const v1::ChunkHeader& header) {
  const int index = results_.results_size();
  if (active_) {
    return absl::InvalidArgumentError(absl::StrCat("header of chunk ", index + 1, " arrived with ",
                                                   remaining_, " bytes of chunk ", index,
                                                   " still missing"));
  }
  PutChunkHeader h;
  h.index = static_cast<uint32_t>(index);
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
  if (absl::Status s = requests_->CheckPutChunk(h); !s.ok()) return s;
  active_ = true;
  remaining_ = h.meta.size_bytes;
  chunk_ = requests_->BeginPut(caller_, *ns_, h);
  return absl::OkStatus();
}

absl::Status PutReactor::ConsumePayload() {
  const uint64_t max_frame_bytes = requests_->env().limits.max_frame_bytes;
  if (payload_.bytes > max_frame_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("frame payload of ", payload_.bytes,
                                                     " bytes exceeds server.max_frame_bytes (",
                                                     max_frame_bytes, ")"));
  }
  if (!active_) {
    return absl::InvalidArgumentError("data frame outside a chunk (no header precedes it)");
  }
  if (payload_.bytes > remaining_) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", results_.results_size(), ": frame carries ", payload_.bytes,
                     " bytes but only ", remaining_, " remain of size_bytes"));
  }
  bytes_received_ += payload_.bytes;
  remaining_ -= payload_.bytes;
  for (const grpc::Slice& slice : payload_.slices) {
    if (chunk_.pending() == nullptr) break;
    absl::Status s = chunk_.pending()->Append(slice.begin(), slice.size());
    if (!s.ok()) chunk_.Fail(s);  // the store refused its own reservation: drain the rest
  }
  payload_.slices.clear();
  if (remaining_ == 0) CompleteChunk();
  return absl::OkStatus();
}

void PutReactor::CompleteChunk() {
  const absl::Status s = chunk_.Finish();
  v1::ChunkResult* result = results_.add_results();
  result->set_already_present(chunk_.already_present());
  if (!s.ok()) {
    result->set_code(static_cast<int>(s.code()));
    result->set_message(std::string(s.message()));
  }
  chunk_ = PutChunk();
  active_ = false;
}

void PutReactor::OnStreamEnd() {
  if (context_->IsCancelled()) {
    chunk_ = PutChunk();  // the client went away: the partial chunk leaves no trace
    requests_->env().log->Debug("put cancelled", {{"chunks", results_.results_size()}});
    End(grpc::Status::CANCELLED);
    return;
  }
  if (active_) {
    EndWithError(absl::InvalidArgumentError(absl::StrCat("stream ended with ", remaining_,
                                                         " bytes of chunk ",
                                                         results_.results_size(), " missing")));
    return;
  }
  *response_ = SerializeMessage(results_);
  requests_->env().log->Debug("put done",
                              {{"chunks", results_.results_size()}, {"bytes", bytes_received_}});
  End(grpc::Status::OK);
}

void PutReactor::EndWithError(const absl::Status& s) {
  chunk_ = PutChunk();
  requests_->LogRefused(Op::kPut, s, context_->peer());
  End(wire::ToGrpcStatus(s));
}

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* NewPutReactor(const Requests* requests,
                                                         grpc::CallbackServerContext* context,
                                                         grpc::ByteBuffer* response) {
  return new PutReactor(requests, context, response);
}

}  // namespace kvstash::server
