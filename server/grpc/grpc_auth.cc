#include "server/grpc/grpc_auth.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace kvstash::server {

absl::StatusOr<std::string> BearerTokenOf(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::string();
  const absl::string_view value(it->second.data(), it->second.size());
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return absl::UnauthenticatedError(
        "authorization metadata must be \"Bearer <token>\" (docs/protocol.md)");
  }
  return std::string(absl::StripAsciiWhitespace(value.substr(kScheme.size())));
}

absl::StatusOr<CallAuth> AuthenticateCall(const Requests& requests, Op op,
                                          const grpc::ServerContextBase& context) {
  absl::StatusOr<std::string> token = BearerTokenOf(context);
  if (!token.ok()) {
    requests.metrics().AddAuthFailure(AuthFailure::kUnauthenticated);
    return token.status();
  }
  return requests.Authenticate(op, *token);
}

}  // namespace kvstash::server
