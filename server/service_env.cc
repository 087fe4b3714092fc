#include "server/service_env.h"

#include <grpcpp/support/slice.h>

#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kvstash::server {

absl::Status ServiceEnv::Admit() const {
  if (draining.load(std::memory_order_relaxed)) {
    return absl::UnavailableError("kvstashd is shutting down");
  }
  return absl::OkStatus();
}

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

}  // namespace kvstash::server
