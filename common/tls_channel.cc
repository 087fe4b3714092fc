#include "common/tls_channel.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/tls_files.h"

namespace kvstash {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeTlsChannelCredentials(
    const TlsChannelFiles& files) {
  const bool has_ca = !files.ca.path.empty();
  const bool has_cert = !files.cert.path.empty();
  if (has_cert != !files.key.path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(has_cert ? files.cert.setting : files.key.setting,
                     ": mutual TLS needs both a client certificate and its key"));
  }
  if (has_ca) {
    absl::StatusOr<std::string> pem = ReadCertificates(files.ca.setting, files.ca.path);
    if (!pem.ok()) return pem.status();
  }
  if (has_cert) {
    absl::StatusOr<std::string> pem = ReadCertificates(files.cert.setting, files.cert.path);
    if (!pem.ok()) return pem.status();
    absl::StatusOr<std::string> key =
        ReadMatchingKey(files.cert.setting, files.cert.path, files.key.setting, files.key.path);
    if (!key.ok()) return key.status();
  }
  // The watcher polls in whole seconds; round up so it is never more often than asked.
  const auto refresh_s = static_cast<unsigned>(
      std::max<int64_t>(1, (absl::ToInt64Milliseconds(files.reload_interval) + 999) / 1000));
  // One credentials object (and so one file watcher thread) per set of files in use: a
  // cluster client has a connection per member, all with the same files.
  const std::string cache_key =
      absl::StrCat(files.ca.path, "\n", files.cert.path, "\n", files.key.path, "\n", refresh_s);
  ABSL_CONST_INIT static absl::Mutex cache_mu(absl::kConstInit);
  absl::MutexLock lock(&cache_mu);
  static auto* cache =
      new absl::flat_hash_map<std::string, std::weak_ptr<grpc::ChannelCredentials>>();
  if (auto it = cache->find(cache_key); it != cache->end()) {
    if (std::shared_ptr<grpc::ChannelCredentials> alive = it->second.lock()) return alive;
  }
  absl::erase_if(*cache, [](const auto& entry) { return entry.second.expired(); });
  grpc::experimental::TlsChannelCredentialsOptions options;
  if (has_ca || has_cert) {
    options.set_certificate_provider(
        std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
            files.key.path, files.cert.path, files.ca.path, refresh_s));
    if (has_ca) options.watch_root_certs();
    if (has_cert) options.watch_identity_key_cert_pairs();
  }
  options.set_verify_server_certs(true);
  options.set_certificate_verifier(
      std::make_shared<grpc::experimental::HostNameCertificateVerifier>());
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::experimental::TlsCredentials(options);
  (*cache)[cache_key] = credentials;
  return credentials;
}

}  // namespace kvstash
