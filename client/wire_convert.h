// Conversions between the client's plain structs and the kvstash.v1 wire messages.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/ucx_wire.h"

namespace kvstash::client_internal {

// Keys concatenated, 16 bytes each, as the wire carries them.
std::string KeysToBytes(absl::Span<const Key128> keys);
// INTERNAL unless `bytes` is exactly 16 bytes (the daemon broke the protocol).
absl::StatusOr<Key128> KeyFromBytes(absl::string_view bytes, absl::string_view what);
// Unknown tier values from a newer daemon read as kNone rather than as garbage.
ChunkTier TierFromWire(uint32_t v);
std::vector<ChunkTier> TiersFromBytes(absl::string_view bytes);
// Totals, or the counters of namespace `ns` when given; DRAM capacity from the tiers.
ServerStats StatsFromProto(const v1::StatsResponse& resp, const Key128* ns);
HealthInfo HealthFromProto(const v1::HealthResponse& resp);
// INTERNAL when the namespace id is not 16 bytes.
absl::StatusOr<NamespaceUsage> UsageFromProto(const v1::NamespaceUsage& usage);

// Whether `hints` says anything (a Put sends hints only then, so a hint-less Put is
// byte-identical to one from a client that predates hints).
bool HasHints(const PutHints& hints);
// The hints as the gRPC chunk header and the UCX Put header carry them.
v1::ChunkHints HintsToProto(const PutHints& hints);
wire::ucx::PutHintsFields HintsToUcx(const PutHints& hints);

}  // namespace kvstash::client_internal
