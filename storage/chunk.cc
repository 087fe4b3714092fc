#include "storage/chunk.h"

#include <cstring>

#include "kvstash/tier_entries.h"

namespace kvstash::storage {

void StoredChunk::CopyTo(void* dst) const {
  auto* out = static_cast<uint8_t*>(dst);
  for (const Segment& s : segments()) {
    std::memcpy(out, s.data, s.size);
    out += s.size;
  }
}

TierUsage NamespaceUsage::Of(Tier tier) const { return TierEntry(tiers, tier); }

uint64_t NamespaceUsage::Chunks() const { return SumOverTiers(tiers, &TierUsage::chunks); }

}  // namespace kvstash::storage
