#include "server/grpc/tls_credentials.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "common/tls_files.h"

namespace kvstash::server {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsConfig& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> key =
      ReadMatchingKey("server.tls.cert_file", tls.cert_file, "server.tls.key_file", tls.key_file);
  if (!key.ok()) return key.status();
  const bool mutual = !tls.client_ca_file.empty();
  if (mutual) {
    absl::StatusOr<std::string> ca =
        ReadCertificates("server.tls.client_ca_file", tls.client_ca_file);
    if (!ca.ok()) return ca.status();
  }
  // The watcher polls in whole seconds; round up so it is never more often than asked.
  const auto refresh_s = static_cast<unsigned>((tls.reload_interval_ms + 999) / 1000);
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      tls.key_file, tls.cert_file, tls.client_ca_file, refresh_s);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (mutual) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

}  // namespace kvstash::server
