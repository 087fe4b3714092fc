#include "client/grpc_auth.h"

#include <utility>

namespace kvstash::client_internal {

std::string BearerMetadata(const std::string& token) {
  return token.empty() ? std::string() : "Bearer " + token;
}

std::shared_ptr<grpc::ChannelCredentials> WithBearerToken(
    std::shared_ptr<grpc::ChannelCredentials> tls, const std::string& token) {
  if (token.empty()) return tls;
  return grpc::CompositeChannelCredentials(std::move(tls), grpc::AccessTokenCredentials(token));
}

}  // namespace kvstash::client_internal
