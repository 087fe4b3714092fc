#include "server/request_rules.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "kvstash/hints.h"
#include "kvstash/v1/kvstash.pb.h"

namespace kvstash::server {
namespace {

absl::Status CheckHints(const PutChunkHints& h, uint32_t index, uint32_t max_ttl_ms) {
  if (!h.parent_key.empty() && h.parent_key.size() != sizeof(Key128)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk ", index, ": hints.parent_key must be 16 bytes, got ", h.parent_key.size()));
  }
  if (h.priority < 0 || h.priority > static_cast<int64_t>(Priority::kHigh)) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", index, ": hints.priority ", h.priority,
                     " is not a known priority (0 normal, 1 low, 2 high)"));
  }
  if (h.ttl_ms > max_ttl_ms) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", index, ": hints.ttl_ms ", h.ttl_ms,
                                                   " exceeds server.max_ttl_ms (", max_ttl_ms,
                                                   ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckKeyCount(size_t n, const ServiceLimits& limits) {
  const uint32_t max_keys = limits.max_keys_per_request;
  if (n > max_keys) {
    return absl::InvalidArgumentError(absl::StrCat(n, " keys exceed server.max_keys_per_request (",
                                                   max_keys, "); split the request"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Key128>> ParseKeys(absl::string_view bytes,
                                              const ServiceLimits& limits) {
  constexpr size_t kKeyBytes = sizeof(Key128);
  if (bytes.size() % kKeyBytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("keys must be a multiple of 16 bytes, got ", bytes.size()));
  }
  const size_t n = bytes.size() / kKeyBytes;
  if (absl::Status s = CheckKeyCount(n, limits); !s.ok()) return s;
  std::vector<Key128> keys(n);
  if (n > 0) std::memcpy(keys.data(), bytes.data(), bytes.size());
  return keys;
}

absl::Status CheckPutChunk(const PutChunkHeader& h, const ServiceLimits& limits) {
  const uint32_t max_keys = limits.max_keys_per_request;
  if (h.key.size() != sizeof(Key128)) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", h.index, ": key must be 16 bytes, got ", h.key.size()));
  }
  if (h.meta.size_bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", h.index, ": size_bytes is 0"));
  }
  if (h.index >= max_keys || h.count > max_keys) {
    return absl::InvalidArgumentError(absl::StrCat("more than server.max_keys_per_request (",
                                                   max_keys, ") chunks in one Put call"));
  }
  return CheckHints(h.hints, h.index, limits.max_ttl_ms);
}

}  // namespace kvstash::server
