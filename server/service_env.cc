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

absl::StatusOr<std::vector<Key128>> ParseKeys(absl::string_view bytes, uint32_t max_keys) {
  constexpr size_t kKeyBytes = sizeof(Key128);
  if (bytes.size() % kKeyBytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("keys must be a multiple of 16 bytes, got ", bytes.size()));
  }
  const size_t n = bytes.size() / kKeyBytes;
  if (n > max_keys) {
    return absl::InvalidArgumentError(absl::StrCat(n, " keys exceed server.max_keys_per_request (",
                                                   max_keys, "); split the request"));
  }
  std::vector<Key128> keys(n);
  if (n > 0) std::memcpy(keys.data(), bytes.data(), bytes.size());
  return keys;
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
