// The server side of the client-streaming Put call, over raw frames (see docs/protocol.md,
// "Put"). Payload slices are copied once, from gRPC's receive buffers straight into the
// store's pending chunk; protobuf never holds them.
//
// Thread-safety: a reactor is driven by gRPC, one read in flight at a time; it deletes
// itself in OnDone.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include "server/requests.h"

namespace kvstash::server {

// Starts the reactor of one Put call. `requests` must outlive the call.
grpc::ServerReadReactor<grpc::ByteBuffer>* NewPutReactor(const Requests* requests,
                                                         grpc::CallbackServerContext* context,
                                                         grpc::ByteBuffer* response);

}  // namespace kvstash::server
