// Tier names and the per-tier entries of the client's stats structs (kvstash/client.h).
#include "absl/strings/string_view.h"
#include "kvstash/client.h"
#include "kvstash/tier_entries.h"

namespace kvstash {

absl::string_view ChunkTierName(ChunkTier tier) { return TierName(tier); }

ChunkTier ChunkTierFromName(absl::string_view name) {
  for (ChunkTier t : {ChunkTier::kGpu, ChunkTier::kDram, ChunkTier::kNvme}) {
    if (TierName(t) == name) return t;
  }
  return ChunkTier::kNone;
}

ServerTierStats ServerStats::Of(ChunkTier tier) const { return TierEntry(tiers, tier); }

TierUsage NamespaceUsage::Of(ChunkTier tier) const { return TierEntry(tiers, tier); }

}  // namespace kvstash
