// The gRPC listener's credentials from the `server.tls:` section: plaintext while TLS is
// off; else TLS whose key, certificate and client CA are watched by gRPC's file watcher,
// so renewed files are served without a restart (docs/security.md, "TLS").
//
// Thread-safety: a function of its arguments.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "absl/status/statusor.h"
#include "server/config.h"

namespace kvstash::server {

// Checks the files (each readable PEM, the key matching the certificate) and builds the
// credentials; with client_ca_file, clients must present a certificate that CA signed.
// INVALID_ARGUMENT naming the setting and file at fault.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsConfig& tls);

}  // namespace kvstash::server
