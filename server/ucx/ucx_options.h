// UcxServerOptions: the daemon's UCX data plane as configured (config `ucx:`), read by the
// UCP context (ucx_context.h) and the server (ucx_server.h).
//
// Thread-safety: a plain struct.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/ucx_setup.h"

namespace kvstash::server::ucx {

struct UcxServerOptions {
  // HOST:PORT to listen on; port 0 picks a free port.
  std::string listen = "127.0.0.1:7072";
  // UCX_TLS for this daemon's context; empty = the environment's UCX_TLS or UCX's default.
  std::string tls;
  // UCX_RNDV_THRESH in bytes; 0 = UCX's default.
  uint64_t rndv_thresh_bytes = 0;
  // UCX_TCP_RX_SEG_SIZE unless the environment sets it; UcxContext::Create checks the range
  // (in ucx_setup::ConfigureUcx) and the effective value goes to clients in the Hello reply.
  uint64_t tcp_segment_bytes = ucx_setup::kDefaultTcpSegmentBytes;
  // Worker threads, 1..64.
  int worker_threads = 1;
  // Allocate shared memory (the DRAM arena) with UCX's `posix` method before `sysv`, so that
  // it is a file the local arena socket can hand to same-host clients as a descriptor
  // (set when server.local_socket is); false keeps UCX's order. An operator's
  // UCX_ALLOC_PRIO wins.
  bool arena_as_file = false;

  absl::Status Validate() const;
};

}  // namespace kvstash::server::ucx
