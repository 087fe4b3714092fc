// The server side of the server-streaming Get call, over raw frames (see docs/protocol.md,
// "Get"). Payload slices reference the stored chunk's memory in place: each slice holds a
// ChunkRef, so the bytes stay allocated until gRPC has sent them, even if the chunk is
// evicted or deleted meanwhile. The next key's chunk is fetched while the current one is
// sent (read ahead by one), so a call holds at most two chunks.
//
// Thread-safety: a reactor is driven by gRPC, one write in flight at a time, and by the
// callback of its one fetch in flight (a store read thread), which hands over under a
// mutex; it deletes itself in OnDone, or in that callback when the call ended first.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "server/grpc/delivery_gate.h"
#include "server/requests.h"

namespace kvstash::server {

// Starts the reactor of one Get call. `requests` and `delivery` (null: the call ends at
// once, without waiting for the client to have the bytes) must outlive the call.
grpc::ServerWriteReactor<grpc::ByteBuffer>* NewGetReactor(const Requests* requests,
                                                          DeliveryGate* delivery,
                                                          grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* request);

}  // namespace kvstash::server
