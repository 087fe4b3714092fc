#include "proto/status_map.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace kvstash::wire {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  return FromCode(static_cast<int>(status.error_code()), status.error_message());
}

absl::Status FromCode(int code, absl::string_view message) {
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(absl::StrCat("unknown status code ", code, ": ", message));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

}  // namespace kvstash::wire
