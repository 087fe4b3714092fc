#include "server/grpc/put_reactor.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"
#include "proto/status_map.h"
#include "server/grpc/grpc_auth.h"
#include "server/grpc/put_stream.h"

namespace kvstash::server {
namespace {

// Receives chunks one after another through a PutStreamParser. A chunk's bytes go into
// `chunk_`, or are discarded when the chunk was refused (its result is already decided)
// or already present.
class PutReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer>, PutStreamSink {
 public:
  PutReactor(const Requests* requests, grpc::CallbackServerContext* context,
             grpc::ByteBuffer* response)
      : requests_(requests),
        metrics_(&requests->metrics()),
        context_(context),
        response_(response),
        parser_(requests->env().limits, this) {
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
    absl::Status s = parser_.OnFrame(frame_);
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

  // PutStreamSink.
  absl::Status OnNamespace(absl::string_view id) override;
  void OnChunkStart(const PutChunkHeader& header) override;
  void OnChunkPayload(absl::Span<const grpc::Slice> slices) override;
  void OnChunkEnd() override;

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
  PutStreamParser parser_;
  Key128 ns_{};
  v1::PutResponse results_;
  // The active chunk; its payload is discarded while chunk_.pending() is null.
  PutChunk chunk_;
};

absl::Status PutReactor::OnNamespace(absl::string_view id) {
  absl::StatusOr<Key128> ns = requests_->ResolveNamespace(caller_, id, auth::Access::kWrite);
  if (!ns.ok()) return ns.status();
  ns_ = *ns;
  return absl::OkStatus();
}

void PutReactor::OnChunkStart(const PutChunkHeader& header) {
  chunk_ = requests_->BeginPut(caller_, ns_, header);
}

void PutReactor::OnChunkPayload(absl::Span<const grpc::Slice> slices) {
  for (const grpc::Slice& slice : slices) {
    if (chunk_.pending() == nullptr) break;
    absl::Status s = chunk_.pending()->Append(slice.begin(), slice.size());
    if (!s.ok()) chunk_.Fail(s);  // the store refused its own reservation: drain the rest
  }
}

void PutReactor::OnChunkEnd() {
  const absl::Status s = chunk_.Finish();
  v1::ChunkResult* result = results_.add_results();
  result->set_already_present(chunk_.already_present());
  if (!s.ok()) {
    result->set_code(static_cast<int>(s.code()));
    result->set_message(std::string(s.message()));
  }
  chunk_ = PutChunk();
}

void PutReactor::OnStreamEnd() {
  if (context_->IsCancelled()) {
    chunk_ = PutChunk();  // the client went away: the partial chunk leaves no trace
    requests_->env().log->Debug("put cancelled", {{"chunks", results_.results_size()}});
    End(grpc::Status::CANCELLED);
    return;
  }
  if (absl::Status s = parser_.OnEnd(); !s.ok()) {
    EndWithError(s);
    return;
  }
  *response_ = wire::SerializeMessage(results_);
  requests_->env().log->Debug(
      "put done", {{"chunks", results_.results_size()}, {"bytes", parser_.bytes_received()}});
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
