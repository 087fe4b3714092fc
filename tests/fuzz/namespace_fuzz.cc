// Fuzzes key and namespace decoding: namespace ids from the wire (ParseNamespaceId), a
// NamespaceSpec as RegisterNamespace receives it (NamespaceFromProto, Validate and the
// registry), concatenated 16-byte keys (ParseKeys) and hex keys (KeyFromHex). Input: one
// byte choosing the decoder (mod 4), then its bytes. Checks: accepted ids and keys encode
// back to the input, a registered spec resolves to the id the client computes, and its
// canonical form registers under the same id.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_util.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/namespace_spec.h"
#include "server/namespace_registry.h"
#include "server/request_rules.h"

namespace kvstash::fuzz {
namespace {

void NamespaceId(absl::string_view bytes) {
  absl::StatusOr<Key128> id = server::ParseNamespaceId(bytes);
  FUZZ_CHECK(id.ok() == (bytes.size() == sizeof(Key128)));
  if (id.ok()) FUZZ_CHECK(KeyToBytes(*id) == bytes);
}

void Spec(absl::string_view bytes) {
  v1::NamespaceSpec spec;
  if (!spec.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
  const Namespace ns = wire::NamespaceFromProto(spec);
  const absl::Status valid = ns.Validate();
  server::NamespaceRegistry registry;
  absl::StatusOr<Key128> id = registry.Register(spec);
  FUZZ_CHECK(id.ok() == valid.ok());
  if (!id.ok()) {
    FUZZ_CHECK(id.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  FUZZ_CHECK(*id == ns.Id());
  FUZZ_CHECK(registry.Resolve(KeyToBytes(*id)).ok());
  absl::StatusOr<v1::NamespaceSpec> stored = registry.Find(*id);
  FUZZ_CHECK(stored.ok());
  const Namespace canonical = wire::NamespaceFromProto(*stored);
  FUZZ_CHECK(canonical.Validate().ok());
  FUZZ_CHECK(canonical.CanonicalEncoding() == ns.CanonicalEncoding());
  FUZZ_CHECK(registry.Register(*stored).value() == *id);
  FUZZ_CHECK(registry.size() == 1);
}

void Keys(absl::string_view bytes) {
  server::ServiceLimits limits;
  limits.max_keys_per_request = 16;
  absl::StatusOr<std::vector<Key128>> keys = server::ParseKeys(bytes, limits);
  FUZZ_CHECK(keys.ok() == (bytes.size() % sizeof(Key128) == 0 &&
                           bytes.size() / sizeof(Key128) <= limits.max_keys_per_request));
  if (!keys.ok()) return;
  std::string joined;
  for (const Key128& k : *keys) joined += KeyToBytes(k);
  FUZZ_CHECK(joined == bytes);
}

void Hex(absl::string_view text) {
  absl::StatusOr<Key128> key = KeyFromHex(text);
  if (!key.ok()) return;
  const std::string hex = KeyToHex(*key);
  FUZZ_CHECK(hex.size() == text.size());
  FUZZ_CHECK(KeyFromHex(hex).value() == *key);
}

}  // namespace
}  // namespace kvstash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvstash::fuzz::QuietProtobuf();
  if (size == 0) return 0;
  const absl::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      kvstash::fuzz::NamespaceId(bytes);
      break;
    case 1:
      kvstash::fuzz::Spec(bytes);
      break;
    case 2:
      kvstash::fuzz::Keys(bytes);
      break;
    default:
      kvstash::fuzz::Hex(bytes);
      break;
  }
  return 0;
}
