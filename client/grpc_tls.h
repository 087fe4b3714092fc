// The channel credentials of a grpc:// or grpcs:// connection: ClientOptions' tls_* fields,
// each falling back to its KVSTASH_TLS_* environment variable, turned into gRPC's TLS
// credentials with the files checked up front (docs/security.md, "TLS").
//
// Thread-safety: functions of their arguments (and of the environment).
#pragma once

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kvstash/client.h"

namespace kvstash::client_internal {

// Environment variables read when the matching ClientOptions field is empty.
inline constexpr char kTlsCaEnvVar[] = "KVSTASH_TLS_CA";
inline constexpr char kTlsCertEnvVar[] = "KVSTASH_TLS_CERT";
inline constexpr char kTlsKeyEnvVar[] = "KVSTASH_TLS_KEY";
inline constexpr char kTlsServerNameEnvVar[] = "KVSTASH_TLS_SERVER_NAME";

struct ChannelSecurity {
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // The name the daemon's certificate is checked against instead of the URI's host; empty:
  // the host.
  std::string server_name;
  bool tls = false;
};

// Plaintext unless `tls_scheme` (grpcs://) or any tls_* setting is configured.
// INVALID_ARGUMENT naming the option (or variable) and file at fault.
absl::StatusOr<ChannelSecurity> MakeChannelSecurity(const ClientOptions& options, bool tls_scheme);

// unix://: plaintext, the daemon's server.local_socket has no TLS (the file system decides
// who reaches it). INVALID_ARGUMENT when a tls_* field is set.
absl::StatusOr<ChannelSecurity> LocalSocketSecurity(const ClientOptions& options);

// ucx:// and unix:// (`scheme`) have no TLS: INVALID_ARGUMENT when a tls_* field is set.
// The KVSTASH_TLS_* variables are not read for them.
absl::Status CheckNoTlsOptions(const ClientOptions& options, absl::string_view scheme);

}  // namespace kvstash::client_internal
