// The streamed Put and Get calls of GrpcTransport, run through a generic stub so payload
// bytes travel as grpc::Slice references: Put sends slices of the caller's buffers
// without copying them, Get copies each received slice once, straight into the caller's
// buffer.
//
// Each call is driven by its calling thread (grpc_call.h).
//
// Thread-safety: each function runs one call and blocks its calling thread until the call
// is over; concurrent calls on one stub are fine.
#pragma once

#include <grpcpp/generic/generic_stub.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "client/transport.h"
#include "kvstash/client.h"

namespace kvstash::client_internal {

inline constexpr char kPutMethod[] = "/kvstash.v1.KvStash/Put";
inline constexpr char kGetMethod[] = "/kvstash.v1.KvStash/Get";

// Sends `items` as PutFrames of at most `frame_bytes` payload bytes each: namespace_id in
// the stream's first frame only, one header frame per chunk carrying its first bytes.
// Returns the call's status; on OK every item's status and already_present are filled.
// Caller memory is referenced by the frames, without copies, and no longer referenced
// once this returns; the one exception is bytes stuck in a socket to a peer that stopped
// reading, which are waited for only a short grace period (see grpc_streams.cc).
absl::Status RunPutStream(grpc::GenericStub* stub, const CallContext& ctx, const Key128& ns,
                          absl::Span<PutItem> items, absl::Span<const uint64_t> checksums,
                          uint32_t frame_bytes);

// Fetches `items` into their buffers. Per item: OK, NOT_FOUND (or another code the daemon
// sent for it), RESOURCE_EXHAUSTED when the chunk exceeds capacity (size tells how big).
// A stream that breaks or violates the framing fails the whole call.
absl::Status RunGetStream(grpc::GenericStub* stub, const CallContext& ctx, const Key128& ns,
                          absl::Span<GetItem> items, uint64_t lease_id);

}  // namespace kvstash::client_internal
