// Tiers as the daemon reports them: each tier's name, and per-tier entries (stats, namespace
// usage, member capacities), one entry of a list per tier, so a new tier needs no new
// field. These name a tier and find its entry.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace kvstash {

// The tier's name in metrics, `kvstash` output and Python, by its wire value (kvstash.proto's
// Tier, whose numbers storage::Tier and ChunkTier share): "gpu", "dram", "nvme"; "none" for
// 0 and any value not listed.
template <typename Tier>
constexpr const char* TierName(Tier tier) {
  constexpr const char* kNames[] = {"none", "gpu", "dram", "nvme"};
  const auto wire = static_cast<uint32_t>(tier);
  return wire < sizeof(kNames) / sizeof(kNames[0]) ? kNames[wire] : "none";
}

// The entry of `tier` in `entries` (each with a `tier` member), or an entry of that tier
// with every other field zero when the list has none.
template <typename Entry, typename Tier>
Entry TierEntry(const std::vector<Entry>& entries, Tier tier) {
  for (const Entry& e : entries) {
    if (e.tier == tier) return e;
  }
  Entry none{};
  none.tier = tier;
  return none;
}

// The sum of `field` over every entry.
template <typename Entry>
uint64_t SumOverTiers(const std::vector<Entry>& entries, uint64_t Entry::*field) {
  uint64_t sum = 0;
  for (const Entry& e : entries) sum += e.*field;
  return sum;
}

// Adds `entry` to the entry of the same tier in `into` with `add(into_entry, entry)`, or
// appends it when `into` has none (merging several daemons' lists).
template <typename Entry, typename Add>
void MergeTierEntry(const Entry& entry, std::vector<Entry>* into, Add add) {
  for (Entry& e : *into) {
    if (e.tier == entry.tier) {
      add(e, entry);
      return;
    }
  }
  into->push_back(entry);
}

}  // namespace kvstash
