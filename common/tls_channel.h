// gRPC channel credentials for TLS from PEM files, shared by every kvstash gRPC client (the
// client library, the daemon's etcd client and its peer probes), so each checks its files
// up front and picks up renewed certificates the same way.
//
// Thread-safety: thread-safe (it reads the files, and shares results through a mutex).
#pragma once

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kvstash {

// One file setting: its path ("" = unset) and the name of the setting it came from, which
// error messages quote (e.g. "cluster.etcd_ca_file" or "KVSTASH_TLS_CA").
struct TlsFileSetting {
  std::string path;
  std::string setting;
};

struct TlsChannelFiles {
  // CA bundle verifying the server's certificate; unset: the system's root certificates.
  TlsFileSetting ca;
  // Client certificate chain (leaf first) and its key, for mutual TLS: both or neither.
  TlsFileSetting cert;
  TlsFileSetting key;
  // How often set files are read again, so renewed certificates and CA bundles are used
  // by new connections (rounded up to whole seconds, gRPC's granularity).
  absl::Duration reload_interval = absl::Seconds(10);

  // True when any of the three files is set (which asks for TLS).
  bool any() const { return !ca.path.empty() || !cert.path.empty() || !key.path.empty(); }
};

// TLS credentials that verify the server's certificate chain and host name. The files are
// checked now: INVALID_ARGUMENT naming the setting and file at fault (missing, unreadable,
// no certificate, a key that does not match, a certificate without its key). Calls with the
// same files while an earlier result is still in use return that object, so they share
// its file watcher.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeTlsChannelCredentials(
    const TlsChannelFiles& files);

}  // namespace kvstash
