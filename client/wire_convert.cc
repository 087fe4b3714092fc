#include "client/wire_convert.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "proto/namespace_spec.h"

namespace kvstash::client_internal {
namespace {

void CountersFromProto(const v1::CounterSet& in, ServerStats* out) {
#define KVSTASH_COPY(name, ...) out->name = in.name();
  KVSTASH_STORE_COUNTERS(KVSTASH_COPY)
#undef KVSTASH_COPY
}

}  // namespace

std::string KeysToBytes(absl::Span<const Key128> keys) {
  std::string out(keys.size() * sizeof(Key128), '\0');
  for (size_t i = 0; i < keys.size(); ++i) {
    std::memcpy(&out[i * sizeof(Key128)], keys[i].data(), sizeof(Key128));
  }
  return out;
}

absl::StatusOr<Key128> KeyFromBytes(absl::string_view bytes, absl::string_view what) {
  Key128 key{};
  if (bytes.size() != key.size()) {
    return absl::InternalError(
        absl::StrCat("daemon sent a ", bytes.size(), "-byte ", what, "; expected 16 bytes"));
  }
  std::memcpy(key.data(), bytes.data(), key.size());
  return key;
}

ChunkTier TierFromWire(uint32_t v) {
  switch (v) {
    case v1::TIER_GPU:
      return ChunkTier::kGpu;
    case v1::TIER_DRAM:
      return ChunkTier::kDram;
    case v1::TIER_NVME:
      return ChunkTier::kNvme;
    default:
      return ChunkTier::kNone;
  }
}

std::vector<ChunkTier> TiersFromBytes(absl::string_view bytes) {
  std::vector<ChunkTier> out;
  out.reserve(bytes.size());
  for (char c : bytes) out.push_back(TierFromWire(static_cast<uint8_t>(c)));
  return out;
}

namespace {

void NvmeFromProto(const v1::NvmeCounters& in, ServerStats* out) {
#define KVSTASH_COPY(name, client, ...) out->client = in.name();
  KVSTASH_NVME_COUNTERS(KVSTASH_COPY)
#undef KVSTASH_COPY
}

ServerTierStats TierFromProto(const v1::TierStats& in) {
  ServerTierStats out;
  out.tier = TierFromWire(in.tier());
#define KVSTASH_COPY(name, ...) out.name = in.name();
  KVSTASH_TIER_STATS(KVSTASH_COPY)
#undef KVSTASH_COPY
  return out;
}

// A daemon that predates NamespaceUsage.tiers sends only the DRAM and NVMe fields.
std::vector<TierUsage> LegacyTierUsage(const v1::NamespaceUsage& u) {
  std::vector<TierUsage> out;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  if (u.dram_chunks() != 0) out.push_back({ChunkTier::kDram, u.dram_chunks(), u.dram_bytes()});
  if (u.nvme_chunks() != 0) out.push_back({ChunkTier::kNvme, u.nvme_chunks(), u.nvme_bytes()});
#pragma GCC diagnostic pop
  return out;
}

}  // namespace

ServerStats StatsFromProto(const v1::StatsResponse& resp, const Key128* ns) {
  ServerStats out;
  CountersFromProto(resp.total(), &out);
  if (ns != nullptr) {
    out = ServerStats();
    std::string id = KeyToBytes(*ns);
    for (const v1::NamespaceStats& n : resp.namespaces()) {
      if (n.namespace_id() == id) CountersFromProto(n.counters(), &out);
    }
  }
  for (const v1::TierStats& t : resp.tiers()) out.tiers.push_back(TierFromProto(t));
  NvmeFromProto(resp.nvme(), &out);
  return out;
}

HealthInfo HealthFromProto(const v1::HealthResponse& resp) {
  HealthInfo out;
  out.serving = resp.state() == v1::HealthResponse::SERVING;
  out.version = resp.version();
  out.uptime_ms = resp.uptime_ms();
  return out;
}

absl::StatusOr<NamespaceUsage> UsageFromProto(const v1::NamespaceUsage& u) {
  NamespaceUsage out;
  absl::StatusOr<Key128> id = KeyFromBytes(u.namespace_id(), "namespace id");
  if (!id.ok()) return id.status();
  out.id = *id;
  out.registered = u.has_spec();
  if (out.registered) out.spec = wire::NamespaceFromProto(u.spec());
  out.tenant = u.tenant();
  for (const v1::TierUsage& t : u.tiers()) {
    out.tiers.push_back({TierFromWire(t.tier()), t.chunks(), t.bytes()});
  }
  if (u.tiers().empty()) out.tiers = LegacyTierUsage(u);
  out.pinned_bytes = u.pinned_bytes();
  return out;
}

bool HasHints(const PutHints& h) {
  return h.has_parent || h.session_id != 0 || h.ttl_ms != 0 || h.priority != Priority::kNormal ||
         h.pin;
}

v1::ChunkHints HintsToProto(const PutHints& h) {
  v1::ChunkHints out;
  if (h.has_parent) out.set_parent_key(KeyToBytes(h.parent));
  out.set_session_id(h.session_id);
  out.set_ttl_ms(h.ttl_ms);
  // An out-of-range value is sent as it is, for the daemon to refuse by name.
  out.set_priority(static_cast<v1::Priority>(h.priority));
  out.set_pin(h.pin);
  return out;
}

wire::ucx::PutHintsFields HintsToUcx(const PutHints& h) {
  wire::ucx::PutHintsFields out{};
  if (h.has_parent) {
    std::memcpy(out.parent_key, h.parent.data(), sizeof(out.parent_key));
    out.hint_flags |= wire::ucx::kHintHasParent;
  }
  if (h.pin) out.hint_flags |= wire::ucx::kHintPin;
  out.session_id = h.session_id;
  out.ttl_ms = h.ttl_ms;
  out.priority = static_cast<uint8_t>(h.priority);
  return out;
}

}  // namespace kvstash::client_internal
