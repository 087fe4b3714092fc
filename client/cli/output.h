// Text the `kvstash` tool prints: byte counts, rates, tiers, lookup summaries.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "kvstash/client.h"

namespace kvstash::cli {

// "dram", "nvme", "gpu", "absent".
absl::string_view TierName(ChunkTier tier);
// Adds `tier` to a table's tier columns unless there, keeping them fastest first.
void AddTierColumn(ChunkTier tier, std::vector<ChunkTier>* columns);
// "512 B", "1.5 KiB", "64.0 MiB".
std::string HumanBytes(uint64_t bytes);
// "time_ms=1.234 MB/s=850.1" (decimal megabytes per second; MB/s=inf for zero time).
std::string RateText(uint64_t bytes, absl::Duration elapsed);
// "hit 2/4 chunks (512 of 1024 tokens)".
std::string LookupSummary(uint32_t hit_chunks, size_t total_chunks, uint32_t chunk_tokens,
                          size_t total_tokens);
// "dram dram nvme", or "-" for none.
std::string TierList(absl::Span<const ChunkTier> tiers);
// What `kvstash stats` prints: one "name value" line per counter, then the tiers' use and,
// when the daemon has an NVMe tier, its counters (kvstash/stats_counters.h).
std::string StatsText(const ServerStats& s);
// What `kvstash namespaces` prints: a header line, one line per namespace (id, tenant,
// model or "-" when not registered, chunks and bytes per tier, pinned bytes), and a count.
std::string NamespacesTable(absl::Span<const NamespaceUsage> namespaces);
// Deterministic payload for `put --size`: the same (seed, size) always gives the same
// bytes, so a later get can be checked against a regenerated copy.
std::vector<uint8_t> PatternBytes(uint64_t seed, size_t size);

}  // namespace kvstash::cli
