// Who is calling over gRPC: the bearer token of a call's metadata, and the caller the
// request layer makes of it. Shared by the unary methods (grpc_service.h) and the Put and
// Get reactors.
//
// Thread-safety: pure functions (AuthenticateCall counts failures in thread-safe metrics).
#pragma once

#include <grpcpp/server_context.h>

#include <string>

#include "absl/status/statusor.h"
#include "server/requests.h"

namespace kvstash::server {

// The bearer token of a gRPC call: its `authorization: Bearer <token>` metadata, "" when
// it has none. UNAUTHENTICATED for other authorization metadata.
absl::StatusOr<std::string> BearerTokenOf(const grpc::ServerContextBase& context);

// The caller of a gRPC call of `op`, from its authorization metadata (Requests::Authenticate).
absl::StatusOr<CallAuth> AuthenticateCall(const Requests& requests, Op op,
                                          const grpc::ServerContextBase& context);

}  // namespace kvstash::server
