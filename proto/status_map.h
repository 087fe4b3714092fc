// The one place where absl::Status and gRPC status codes meet. Both use the canonical
// google.rpc.Code numbering, so codes map one to one and messages are kept.
//
// Thread-safety: stateless functions; safe from any thread.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace kvstash::wire {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);
// For per-chunk result codes carried inside messages (ChunkResult.code, GetFrame.code).
absl::Status FromCode(int code, absl::string_view message);

}  // namespace kvstash::wire
