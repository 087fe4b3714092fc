// The UCX transport names this host can use, so that a transport list (UCX_TLS syntax) with
// a name UCX cannot use is refused up front: UCX itself only warns, on stdout, and runs on
// what is left (for kvstash: TCP, which connection setup adds).
//
// Thread-safety: thread-safe; HostTransportNames gathers the names once per process.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace kvstash::wire::ucx {

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

}  // namespace kvstash::wire::ucx
