// How a gRPC client presents its bearer token (docs/protocol.md, "Authentication"): the
// daemon reads `authorization: Bearer <token>` metadata. Over TLS the token rides as call
// credentials (grpc::AccessTokenCredentials sends exactly that header); on a plaintext
// channel gRPC drops call credentials, so each call adds the metadata itself.
//
// Thread-safety: stateless functions.
#pragma once

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

namespace kvstash::client_internal {

// "Bearer <token>", the plaintext channel's metadata value; "" when `token` is empty.
std::string BearerMetadata(const std::string& token);

// `tls` with call credentials that present `token` on every call; `tls` itself when the
// token is empty. REQUIRES: `tls` is a secure (TLS) credential.
std::shared_ptr<grpc::ChannelCredentials> WithBearerToken(
    std::shared_ptr<grpc::ChannelCredentials> tls, const std::string& token);

}  // namespace kvstash::client_internal
