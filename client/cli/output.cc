#include "client/cli/output.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace kvstash::cli {

void AddTierColumn(ChunkTier tier, std::vector<ChunkTier>* columns) {
  if (std::find(columns->begin(), columns->end(), tier) != columns->end()) return;
  columns->insert(std::upper_bound(columns->begin(), columns->end(), tier), tier);
}

absl::string_view TierName(ChunkTier tier) {
  return tier == ChunkTier::kNone ? "absent" : ChunkTierName(tier);
}

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", v, kUnits[unit]);
}

std::string RateText(uint64_t bytes, absl::Duration elapsed) {
  double seconds = absl::ToDoubleSeconds(elapsed);
  double ms = seconds * 1e3;
  if (seconds <= 0) return absl::StrFormat("time_ms=%.3f MB/s=inf", ms);
  return absl::StrFormat("time_ms=%.3f MB/s=%.1f", ms, static_cast<double>(bytes) / seconds / 1e6);
}

std::string LookupSummary(uint32_t hit_chunks, size_t total_chunks, uint32_t chunk_tokens,
                          size_t total_tokens) {
  return absl::StrCat("hit ", hit_chunks, "/", total_chunks, " chunks (",
                      uint64_t{hit_chunks} * chunk_tokens, " of ", total_tokens, " tokens)");
}

std::string TierList(absl::Span<const ChunkTier> tiers) {
  if (tiers.empty()) return "-";
  return absl::StrJoin(tiers, " ",
                       [](std::string* out, ChunkTier t) { absl::StrAppend(out, TierName(t)); });
}

namespace {

// "used 512 / capacity 1024 (512 B of 1.0 KiB" (the caller closes the parenthesis).
std::string UsedText(uint64_t used, uint64_t capacity) {
  return absl::StrCat("used ", used, " / capacity ", capacity, " (", HumanBytes(used), " of ",
                      HumanBytes(capacity));
}

}  // namespace

std::string StatsText(const ServerStats& s) {
  std::string out;
#define KVSTASH_LINE(name, ...) \
  absl::StrAppend(              \
      &out, #name " ", s.name,  \
      absl::EndsWith(#name, "bytes") ? absl::StrCat(" (", HumanBytes(s.name), ")") : "", "\n");
  KVSTASH_STORE_COUNTERS(KVSTASH_LINE)
#undef KVSTASH_LINE
  for (const ServerTierStats& t : s.tiers) {
    const double pct = t.capacity_bytes == 0 ? 0.0
                                             : 100.0 * static_cast<double>(t.used_bytes) /
                                                   static_cast<double>(t.capacity_bytes);
    absl::StrAppend(&out, ChunkTierName(t.tier), " ", UsedText(t.used_bytes, t.capacity_bytes),
                    ", ", absl::StrFormat("%.1f%%", pct), "), chunks ", t.chunks, ", hits ", t.hits,
                    "\n");
  }
  if (s.Of(ChunkTier::kNvme).capacity_bytes == 0) return out;  // no NVMe tier
  // A label that starts with a space continues the line above.
  std::string nvme;
#define KVSTASH_LINE(name, client, kind, cli, ...) \
  absl::StrAppend(&nvme, cli[0] == ' ' ? "" : "\n", cli, " ", s.client);
  KVSTASH_NVME_COUNTERS(KVSTASH_LINE)
#undef KVSTASH_LINE
  absl::StrAppend(&out, absl::StripPrefix(nvme, "\n"), "\n");
  return out;
}

std::string NamespacesTable(absl::Span<const NamespaceUsage> namespaces) {
  // A column pair per tier that holds any of them, DRAM always.
  std::vector<ChunkTier> tiers = {ChunkTier::kDram};
  for (const NamespaceUsage& u : namespaces) {
    for (const TierUsage& t : u.tiers) AddTierColumn(t.tier, &tiers);
  }
  auto row = [&](absl::string_view id, absl::string_view tenant, absl::string_view model,
                 auto tier_cells, absl::string_view pinned) {
    std::string line = absl::StrFormat("%-32s  %-12s %-20s", id, tenant, model);
    for (ChunkTier t : tiers) {
      const auto [chunks, bytes] = tier_cells(t);
      absl::StrAppendFormat(&line, " %8s %10s", chunks, bytes);
    }
    absl::StrAppendFormat(&line, " %10s\n", pinned);
    return line;
  };
  std::string out = row(
      "namespace", "tenant", "model",
      [](ChunkTier t) {
        return std::pair(std::string(ChunkTierName(t)), absl::StrCat(ChunkTierName(t), "_bytes"));
      },
      "pinned");
  for (const NamespaceUsage& u : namespaces) {
    out += row(
        KeyToHex(u.id), u.tenant.empty() ? "-" : u.tenant, u.registered ? u.spec.model_id : "-",
        [&](ChunkTier t) {
          const TierUsage usage = u.Of(t);
          return std::pair(absl::StrCat(usage.chunks), HumanBytes(usage.bytes));
        },
        HumanBytes(u.pinned_bytes));
  }
  absl::StrAppend(&out, namespaces.size(), namespaces.size() == 1 ? " namespace" : " namespaces",
                  "\n");
  return out;
}

std::vector<uint8_t> PatternBytes(uint64_t seed, size_t size) {
  std::vector<uint8_t> out(size);
  // splitmix64: cheap, and every 8-byte word differs, so shifted or swapped frames show.
  uint64_t state = seed;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(&out[i], &z, 8);
  }
  for (uint64_t z = state * 0x9e3779b97f4a7c15ull; i < size; ++i, z >>= 8) {
    out[i] = static_cast<uint8_t>(z);
  }
  return out;
}

}  // namespace kvstash::cli
