#include "client/wire_convert.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvstash::client_internal {
namespace {

void CountersFromProto(const v1::CounterSet& c, ServerStats* out) {
  out->chunks = c.chunks();
  out->bytes = c.bytes();
  out->hits = c.hits();
  out->misses = c.misses();
  out->puts = c.puts();
  out->evictions = c.evictions();
  out->deletes = c.deletes();
  out->lookups = c.lookups();
  out->lookup_hit_chunks = c.lookup_hit_chunks();
}

}  // namespace

std::string KeysToBytes(absl::Span<const Key128> keys) {
  std::string out(keys.size() * sizeof(Key128), '\0');
  for (size_t i = 0; i < keys.size(); ++i) {
    std::memcpy(&out[i * sizeof(Key128)], keys[i].data(), sizeof(Key128));
  }
  return out;
}

std::string KeyToBytes(const Key128& key) {
  return std::string(reinterpret_cast<const char*>(key.data()), key.size());
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

void NvmeFromProto(const v1::NvmeCounters& n, ServerStats* out) {
  out->nvme_hits = n.hits();
  out->nvme_misses = n.misses();
  out->nvme_evictions = n.evictions();
  out->demotions = n.demotions();
  out->demotion_drops = n.demotion_drops();
  out->demotion_failures = n.demotion_failures();
  out->demotions_pending = n.demotions_pending();
  out->promotions = n.promotions();
  out->write_throughs = n.write_throughs();
  out->checksum_failures = n.checksum_failures();
  out->nvme_io_errors = n.io_errors();
  out->recovered_chunks = n.recovered_chunks();
  out->nvme_gc_runs = n.gc_runs();
  out->nvme_gc_waits = n.gc_waits();
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
  for (const v1::TierStats& t : resp.tiers()) {
    if (t.tier() == v1::TIER_DRAM) {
      out.dram_capacity_bytes = t.capacity_bytes();
      out.dram_used_bytes = t.used_bytes();
    } else if (t.tier() == v1::TIER_NVME) {
      out.nvme_capacity_bytes = t.capacity_bytes();
      out.nvme_used_bytes = t.used_bytes();
      out.nvme_chunks = t.chunks();
    }
  }
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

}  // namespace kvstash::client_internal
