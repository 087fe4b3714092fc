// Request handling of the UCX data plane: the active-message callback that every
// UcxWorker registers for wire::ucx::kRequestAmId (UcxServer hands it to
// UcxWorker::Create), and the Put, Get and unary operations behind it. Same semantics and
// status codes as the gRPC service (docs/protocol.md): both transports call the request
// layer (server/requests.h) for everything but moving bytes.
// Dispatch and connection setup live in ucx_requests.cc, Put in ucx_put.cc, Get in
// ucx_get.cc.
//
// Put: BeginPut reserves the chunk; a rendezvous payload is received straight into the
// pending chunk's memory, an eager one copied; CommitPut publishes it. A receive that fails
// (the client died) drops the pending chunk, which leaves no trace.
// Get: each found chunk goes back as one reply per contiguous run of its stored memory,
// sent from the stored bytes; the ChunkRef is held until UCX completes the send.
//
// Thread-safety: runs on the worker's thread only (UCX calls it from progress).
#pragma once

#include <ucp/api/ucp.h>

namespace kvstash::server::ucx {

// `arg` is the UcxWorker. Never fails the message: every problem is answered with an error
// reply to the request's id (or dropped if the sender cannot be answered).
ucs_status_t OnRequestMessage(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param);

}  // namespace kvstash::server::ucx
