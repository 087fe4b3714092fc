// Per-tier entries: the daemon reports each tier as one entry of a list (stats, namespace
// usage, member capacities), so a new tier needs no new field. These find a tier's entry.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace kvstash {

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
