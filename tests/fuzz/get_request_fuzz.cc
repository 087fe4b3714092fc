// Fuzzes the decoding of a gRPC Get request as the Get reactor takes it (proto/frame_codec.h
// ParseMessage, server/request_rules.h ParseKeys, then the namespace registry's Resolve, as
// Requests::BeginGet resolves it): the serialized v1.GetRequest, its namespace id and its
// concatenated keys. Input: one byte
// giving the number of slices, then the request bytes. Checks: an accepted request names
// the registered namespace, its keys are the request's key bytes in order, and never more
// than max_keys_per_request.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_util.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"
#include "server/namespace_registry.h"
#include "server/request_rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvstash::fuzz::QuietProtobuf();
  using namespace kvstash;
  const server::NamespaceRegistry* registry = &fuzz::CorpusRegistry();
  if (size == 0) return 0;
  server::ServiceLimits limits;
  limits.max_keys_per_request = 16;
  const absl::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  v1::GetRequest parsed;
  if (!wire::ParseMessage(fuzz::ToBuffer(bytes, data[0] % 8), &parsed).ok()) return 0;
  absl::StatusOr<std::vector<Key128>> keys = server::ParseKeys(parsed.keys(), limits);
  if (!keys.ok()) {
    FUZZ_CHECK(keys.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  absl::StatusOr<Key128> ns = registry->Resolve(parsed.namespace_id());
  if (!ns.ok()) return 0;
  v1::GetRequest reference;
  FUZZ_CHECK(reference.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  FUZZ_CHECK(registry->Check(*ns).ok());
  FUZZ_CHECK(KeyToBytes(*ns) == reference.namespace_id());
  FUZZ_CHECK(keys->size() <= limits.max_keys_per_request);
  FUZZ_CHECK(keys->size() * sizeof(Key128) == reference.keys().size());
  for (size_t i = 0; i < keys->size(); ++i) {
    FUZZ_CHECK(std::memcmp((*keys)[i].data(), reference.keys().data() + i * sizeof(Key128),
                           sizeof(Key128)) == 0);
  }
  FUZZ_CHECK(parsed.lease_id() == reference.lease_id());
  return 0;
}
