// Tier names and the per-tier entries of the client's stats structs (kvstash/client.h).
#include "absl/strings/string_view.h"
#include "kvstash/client.h"
#include "kvstash/tier_entries.h"

namespace kvstash {
namespace {

constexpr std::pair<ChunkTier, absl::string_view> kNames[] = {
    {ChunkTier::kGpu, "gpu"}, {ChunkTier::kDram, "dram"}, {ChunkTier::kNvme, "nvme"}};

}  // namespace

absl::string_view ChunkTierName(ChunkTier tier) {
  for (const auto& [t, name] : kNames) {
    if (t == tier) return name;
  }
  return "none";
}

ChunkTier ChunkTierFromName(absl::string_view name) {
  for (const auto& [t, n] : kNames) {
    if (n == name) return t;
  }
  return ChunkTier::kNone;
}

ServerTierStats ServerStats::Of(ChunkTier tier) const { return TierEntry(tiers, tier); }

TierUsage NamespaceUsage::Of(ChunkTier tier) const { return TierEntry(tiers, tier); }

}  // namespace kvstash
