#include "server/service_env.h"

#include <grpcpp/support/slice.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace kvstash::server {

absl::Status ServiceEnv::Admit() const {
  if (draining.load(std::memory_order_relaxed)) {
    return absl::UnavailableError("kvstashd is shutting down");
  }
  return absl::OkStatus();
}

absl::Status ParseMessage(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* msg) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Valid() || !buffer.Dump(&slices).ok()) {
    return absl::InvalidArgumentError("unreadable request");
  }
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  if (!msg->ParseFromString(bytes)) return absl::InvalidArgumentError("malformed request");
  return absl::OkStatus();
}

grpc::ByteBuffer SerializeMessage(const google::protobuf::MessageLite& msg) {
  grpc::Slice slice(msg.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace kvstash::server
