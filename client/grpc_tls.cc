#include "client/grpc_tls.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/tls_channel.h"

namespace kvstash::client_internal {
namespace {

// An option's value, or its environment variable's; `source` says which, for messages.
struct Setting {
  std::string value;
  std::string source;
};

Setting Resolve(const std::string& field, const char* field_name, const char* env_var) {
  if (!field.empty()) return {field, absl::StrCat("ClientOptions.", field_name)};
  const char* env = std::getenv(env_var);
  return {env == nullptr ? "" : env, env_var};
}

}  // namespace

absl::Status CheckNoTlsOptions(const ClientOptions& options, absl::string_view scheme) {
  for (const auto* field : {&options.tls_ca_file, &options.tls_cert_file, &options.tls_key_file,
                            &options.tls_server_name}) {
    if (!field->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ClientOptions.tls_*: ", scheme,
          ":// has no TLS; use grpc:// or grpcs:// for TLS, or leave the tls_* options empty "
          "(docs/security.md)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ChannelSecurity> LocalSocketSecurity(const ClientOptions& options) {
  if (absl::Status s = CheckNoTlsOptions(options, "unix"); !s.ok()) return s;
  ChannelSecurity out;
  out.credentials = grpc::InsecureChannelCredentials();
  return out;
}

absl::StatusOr<ChannelSecurity> MakeChannelSecurity(const ClientOptions& options, bool tls_scheme) {
  const Setting ca = Resolve(options.tls_ca_file, "tls_ca_file", kTlsCaEnvVar);
  const Setting cert = Resolve(options.tls_cert_file, "tls_cert_file", kTlsCertEnvVar);
  const Setting key = Resolve(options.tls_key_file, "tls_key_file", kTlsKeyEnvVar);
  const Setting name = Resolve(options.tls_server_name, "tls_server_name", kTlsServerNameEnvVar);
  ChannelSecurity out;
  out.tls = tls_scheme || !ca.value.empty() || !cert.value.empty() || !key.value.empty() ||
            !name.value.empty();
  if (!out.tls) {
    out.credentials = grpc::InsecureChannelCredentials();
    return out;
  }
  TlsChannelFiles files;
  files.ca = {ca.value, ca.source};
  files.cert = {cert.value, cert.source};
  files.key = {key.value, key.source};
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeTlsChannelCredentials(files);
  if (!credentials.ok()) return credentials.status();
  out.credentials = *std::move(credentials);
  out.server_name = name.value;
  return out;
}

}  // namespace kvstash::client_internal
