#include "server/put_reactor.h"

#include <cstring>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"
#include "proto/status_map.h"

namespace kvstash::server {
namespace {

// Receives chunks one after another. A chunk is "active" from its header frame until
// size_bytes payload bytes have arrived; while active its bytes go into `pending_`, or are
// discarded when the chunk was refused (its result is already decided) or already present.
class PutReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  PutReactor(const ServiceEnv* env, grpc::CallbackServerContext* context,
             grpc::ByteBuffer* response)
      : env_(env), context_(context), response_(response) {
    env_->metrics.CallStarted();
    if (absl::Status s = env_->Admit(); !s.ok()) {
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
    env_->metrics.AddReceivedBytes(frame_.Length());
    absl::Status s = HandleFrame();
    frame_.Clear();
    if (!s.ok()) {
      EndWithError(s);
      return;
    }
    StartRead(&frame_);
  }

  void OnDone() override {
    env_->metrics.CallEnded();
    env_->metrics.RecordCall(Op::kPut, code_, start_);
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

  const ServiceEnv* const env_;
  grpc::CallbackServerContext* const context_;
  grpc::ByteBuffer* const response_;
  const TransportMetrics::Clock::time_point start_ = TransportMetrics::Clock::now();
  int code_ = 0;

  grpc::ByteBuffer frame_;
  v1::PutFrame head_;
  wire::FramePayload payload_;
  std::optional<Key128> ns_;
  v1::PutResponse results_;
  uint64_t bytes_received_ = 0;

  // The active chunk.
  bool active_ = false;
  uint64_t remaining_ = 0;
  std::unique_ptr<storage::PendingChunk> pending_;  // null: discarding the payload
  v1::ChunkResult result_;                          // decided early when discarding
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
  absl::StatusOr<Key128> id = env_->registry->Resolve(id_bytes);
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
  storage::ChunkId id;
  id.ns = *ns_;
  if (header.key().size() != id.key.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", index, ": key must be 16 bytes, got ", header.key().size()));
  }
  if (header.size_bytes() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", index, ": size_bytes is 0"));
  }
  if (static_cast<uint32_t>(index) >= env_->limits.max_keys_per_request) {
    return absl::InvalidArgumentError(absl::StrCat("more than server.max_keys_per_request (",
                                                   env_->limits.max_keys_per_request,
                                                   ") chunks in one Put call"));
  }
  std::memcpy(id.key.data(), header.key().data(), id.key.size());
  storage::ChunkMeta meta;
  meta.size_bytes = header.size_bytes();
  meta.tokens = header.tokens();
  meta.format = header.format();
  meta.checksum = header.checksum();
  active_ = true;
  remaining_ = meta.size_bytes;
  result_.Clear();
  absl::StatusOr<std::unique_ptr<storage::PendingChunk>> pending = env_->store->BeginPut(id, meta);
  if (pending.ok()) {
    pending_ = std::move(*pending);
  } else if (absl::IsAlreadyExists(pending.status())) {
    result_.set_already_present(true);  // idempotent repeat: drain and acknowledge
  } else {
    result_.set_code(static_cast<int>(pending.status().code()));
    result_.set_message(std::string(pending.status().message()));
  }
  return absl::OkStatus();
}

absl::Status PutReactor::ConsumePayload() {
  if (payload_.bytes > env_->limits.max_frame_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("frame payload of ", payload_.bytes,
                                                     " bytes exceeds server.max_frame_bytes (",
                                                     env_->limits.max_frame_bytes, ")"));
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
    if (pending_ == nullptr) break;
    absl::Status s = pending_->Append(slice.begin(), slice.size());
    if (!s.ok()) {  // the store refused its own reservation: report it, drain the rest
      result_.set_code(static_cast<int>(s.code()));
      result_.set_message(std::string(s.message()));
      pending_.reset();
    }
  }
  payload_.slices.clear();
  if (remaining_ == 0) CompleteChunk();
  return absl::OkStatus();
}

void PutReactor::CompleteChunk() {
  if (pending_ != nullptr) {
    absl::Status s = env_->store->CommitPut(std::move(pending_));
    if (!s.ok()) {
      result_.set_code(static_cast<int>(s.code()));
      result_.set_message(std::string(s.message()));
    }
  }
  env_->metrics.AddPutResult(result_.already_present() ? PutResult::kAlreadyPresent
                             : result_.code() != 0       ? PutResult::kFailed
                                                         : PutResult::kStored);
  *results_.add_results() = result_;
  active_ = false;
}

void PutReactor::OnStreamEnd() {
  if (context_->IsCancelled()) {
    pending_.reset();  // the client went away: the partial chunk leaves no trace
    env_->log->Debug("put cancelled", {{"chunks", results_.results_size()}});
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
  env_->log->Debug("put done", {{"chunks", results_.results_size()}, {"bytes", bytes_received_}});
  End(grpc::Status::OK);
}

void PutReactor::EndWithError(const absl::Status& s) {
  pending_.reset();
  env_->log->Debug("put refused", {{"status", s}, {"peer", context_->peer()}});
  End(wire::ToGrpcStatus(s));
}

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* NewPutReactor(const ServiceEnv* env,
                                                         grpc::CallbackServerContext* context,
                                                         grpc::ByteBuffer* response) {
  return new PutReactor(env, context, response);
}

}  // namespace kvstash::server
