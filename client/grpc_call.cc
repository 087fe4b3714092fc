#include "client/grpc_call.h"

#include <grpcpp/support/byte_buffer.h>

#include <vector>

#include "absl/time/time.h"
#include "proto/status_map.h"

namespace kvstash::client_internal {

void ApplyCallContext(const CallContext& ctx, grpc::ClientContext* cc) {
  if (ctx.deadline != absl::InfiniteFuture()) cc->set_deadline(absl::ToChronoTime(ctx.deadline));
  if (!ctx.authorization.empty()) {
    cc->AddMetadata("authorization", std::string(ctx.authorization));
  }
}

grpc::CompletionQueue* ThreadQueue() {
  struct Owned {
    grpc::CompletionQueue cq;
    ~Owned() {
      cq.Shutdown();
      void* tag;
      bool ok;
      while (cq.Next(&tag, &ok)) {
      }
    }
  };
  thread_local Owned owned;
  return &owned.cq;
}

absl::StatusOr<std::string> RunUnaryCall(grpc::GenericStub* stub, const CallContext& ctx,
                                         const char* method, const std::string& request) {
  grpc::ClientContext cc;
  ApplyCallContext(ctx, &cc);
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::CompletionQueue* cq = ThreadQueue();
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub->PrepareUnaryCall(&cc, method, request_buffer, cq);
  call->StartCall();
  grpc::ByteBuffer reply;
  grpc::Status status;
  call->Finish(&reply, &status, TagOf(StreamOp::kFinish));
  void* tag = nullptr;
  bool ok = false;
  cq->Next(&tag, &ok);  // Finish always completes, ok or not
  if (!status.ok()) return wire::FromGrpcStatus(status);
  std::vector<grpc::Slice> slices;
  if (reply.Valid() && !reply.Dump(&slices).ok()) {
    return absl::InternalError("kvstashd sent an unreadable gRPC reply");
  }
  std::string out;
  out.reserve(reply.Length());
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

std::unique_ptr<PumpedCall::AsyncStream> PumpedCall::Open(grpc::GenericStub* stub,
                                                          grpc::ClientContext* context,
                                                          const char* method) {
  context->set_initial_metadata_corked(true);
  std::unique_ptr<AsyncStream> call = stub->PrepareCall(context, method, cq_);
  call->StartCall(nullptr);
  return call;
}

StreamOp PumpedCall::Wait(bool* ok) {
  void* tag = nullptr;
  if (!cq_->Next(&tag, ok)) {  // only a shut-down queue says so; ours never is
    *ok = false;
    pending_ = 0;
    return StreamOp::kFinish;
  }
  --pending_;
  return static_cast<StreamOp>(reinterpret_cast<intptr_t>(tag));
}

}  // namespace kvstash::client_internal
