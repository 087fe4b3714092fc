// UCX set-up shared by the daemon and the client: the transport names this host can use (so
// that a transport list in UCX_TLS syntax with a name UCX cannot use is refused up front:
// UCX itself only warns, on stdout, and runs on what is left), the options both sides must
// agree on, and worker creation.
//
// Thread-safety: thread-safe; HostTransportNames and the TCP segment key are gathered once
// per process.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvstash::ucx_setup {

// The names UCX_TLS may use on this host, sorted: each transport UCX found (tcp, posix,
// sysv, cma, self, rc_mlx5, cuda_copy, ...) and each alias UCX defines (sm, shm, mm, ib, rc,
// ud, dc, cuda, ...) of which at least one member was found. Empty when UCX could not be
// asked.
const std::vector<std::string>& HostTransportNames();

// OK when every entry of `tls` (a UCX_TLS list; an entry's ":aux" suffix is ignored) is in
// `available`, or when there is nothing to check: `tls` empty, "all" in it, an exclusion
// list ("^..."), or `available` empty. Else INVALID_ARGUMENT naming the entries that are not
// and listing `available`: `"bogus" not available on this host (available: self, tcp)`.
absl::Status CheckTransportNames(const std::string& tls, const std::vector<std::string>& available);

// UCX's sockaddr connection setup needs a network transport in the list, while the data
// endpoint (created from the worker address) may use any, shared memory included. Returns
// `tls` with ",tcp" appended when it names transports but none a connection can be set up
// over; "" (UCX's default) and exclusion lists ("^...") come back unchanged.
std::string WithConnectionTransport(const std::string& tls);

// Whether the transport list `tls` (empty: UCX_TLS from the environment, else UCX's
// default, all) lets UCX use shared memory between processes (sm, posix or sysv).
bool AllowsSharedMemory(const std::string& tls);

// UCX's TCP transport sends rendezvous data in fragments as large as the sender's receive
// segment (UCX_TCP_RX_SEG_SIZE) and aborts the receiving process, on an assertion, when a
// fragment exceeds its own segment. So the daemon reports its segment in the Hello reply
// and a client whose own differs refuses to go on (FAILED_PRECONDITION) before it sends or
// asks for any payload. Default 256 KiB, four times UCX's own, because rendezvous data over
// TCP arrives in fragments of this size, each received and copied on its own
// (bench/results/2026-11-25-tuned-defaults).
inline constexpr uint64_t kDefaultTcpSegmentBytes = 256 << 10;
inline constexpr uint64_t kMinTcpSegmentBytes = 16 << 10;
inline constexpr uint64_t kMaxTcpSegmentBytes = 16 << 20;

// The TCP segment UCX will use: UCX_TCP_RX_SEG_SIZE from the environment when set (an
// operator's UCX settings win over the configured ones, and UCX reads that variable
// whatever ConfigureUcx asks), else `configured`. INVALID_ARGUMENT for a value UCX would
// not take, or one outside [kMinTcpSegmentBytes, kMaxTcpSegmentBytes].
absl::StatusOr<uint64_t> EffectiveTcpSegmentBytes(uint64_t configured);

// Applies the UCX options both sides need to `config`: the transport list `tls` (empty:
// UCX_TLS from the environment) as WithConnectionTransport extends it; peer-failure
// handling on the shared-memory transports (MM_ERROR_HANDLING, only when `tls` allows shared
// memory), without which UCX leaves them out of endpoints that handle peer failures, i.e.
// out of every kvstash endpoint; and the TCP receive segment, EffectiveTcpSegmentBytes of
// `tcp_segment_bytes` (its errors included), which it returns. The segment goes under the
// key spelling the TCP transport of the loaded UCX accepts ("RX_SEG_SIZE" up to UCX 1.13,
// "TCP_RX_SEG_SIZE" later; asked of the transport once per process), since UCX ignores,
// with a warning, a key no transport takes.
absl::StatusOr<uint64_t> ConfigureUcx(const std::string& tls, uint64_t tcp_segment_bytes,
                                      void* ucp_config);

// Creates a worker used by one thread at a time (UCS_THREAD_MODE_SERIALIZED) and returns it
// with its event fd (for sleeping in poll()). UNAVAILABLE on failure, nothing left behind.
absl::Status CreateWorker(ucp_context_h context, ucp_worker_h* worker, int* efd);

// Registers `cb(arg, ...)` for whole (not fragmented) active messages with id `am_id`.
absl::Status SetWholeMessageHandler(ucp_worker_h worker, unsigned am_id, ucp_am_recv_callback_t cb,
                                    void* arg);

}  // namespace kvstash::ucx_setup
