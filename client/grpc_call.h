// The caller-driven gRPC call machinery of GrpcTransport: every call runs on the thread
// that made it, through that thread's own completion queue, instead of gRPC's callback
// threads handling each completion and then waking the caller (several thread hand-offs
// per MiB-sized frame). Unary calls move serialized messages through a generic stub.
//
// Thread-safety: each function runs one call and blocks its calling thread until the call
// is over; concurrent calls on one stub are fine. PumpedCall is thread-compatible.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/completion_queue.h>
#include <grpcpp/generic/generic_stub.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/transport.h"

namespace kvstash::client_internal {

// Sets the attempt's deadline, and the authorization metadata when `ctx` has one, on a call.
void ApplyCallContext(const CallContext& ctx, grpc::ClientContext* cc);

// The calling thread's completion queue. Every call drains all of its operations before it
// returns, so the queue is idle between calls and the thread's next call reuses it.
grpc::CompletionQueue* ThreadQueue();

// Sends the serialized `request` to `method` ("/package.Service/Method") and returns the
// serialized reply, or the call's status.
absl::StatusOr<std::string> RunUnaryCall(grpc::GenericStub* stub, const CallContext& ctx,
                                         const char* method, const std::string& request);

// Operations of a streamed call, used as completion-queue tags.
enum class StreamOp : intptr_t { kWrite = 1, kRead = 2, kFinish = 3 };

inline void* TagOf(StreamOp op) { return reinterpret_cast<void*>(static_cast<intptr_t>(op)); }

// One streamed call driven by the calling thread: counts the operations in flight so the
// call is only left once gRPC is done with every one of them.
// Thread-compatible: used by the thread that made the call.
class PumpedCall {
 protected:
  using AsyncStream = grpc::GenericClientAsyncReaderWriter;

  explicit PumpedCall(grpc::CompletionQueue* cq) : cq_(cq) {}

  // Opens the call; its headers leave with the first message instead of a packet of
  // their own (corked), so StartCall itself completes no tag.
  std::unique_ptr<AsyncStream> Open(grpc::GenericStub* stub, grpc::ClientContext* context,
                                    const char* method);

  // Marks an operation just issued.
  void Issued() { ++pending_; }
  bool Pending() const { return pending_ > 0; }

  // Blocks until an issued operation completes; the call's deadline bounds the wait.
  StreamOp Wait(bool* ok);

 private:
  grpc::CompletionQueue* const cq_;
  int pending_ = 0;
};

}  // namespace kvstash::client_internal
