#include "server/store_metrics.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "kvstash/tier_entries.h"

namespace kvstash::server {
namespace {

using metrics::Family;
using metrics::Labels;
using metrics::MetricType;

struct FamilyDef {
  const char* name;
  const char* help;
  MetricType type;
};

enum StoreFamily {
  kCapacity,
  kUsed,
  kBytes,
  kChunks,
  kGets,
  kPuts,
  kDeletes,
  kEvictions,
  kDemotions,
  kQueueDepth,
  kPromotions,
  kChecksumFailures,
  kIoErrors,
  kRecovered,
  kWritesSuspended,
  kReopens,
  kGcRuns,
  kGcWaits,
  kHintDrops,
  kQuotaEvictions,
  kPinQuotaRefusals,
  kPinnedBytes,
  kSessions,
  kStoreFamilyCount
};
constexpr FamilyDef kStoreFamilies[kStoreFamilyCount] = {
    {"kvstash_tier_capacity_bytes", "Byte budget of the tier.", MetricType::kGauge},
    {"kvstash_tier_used_bytes", "Allocator bytes in use in the tier, slack included.",
     MetricType::kGauge},
    {"kvstash_tier_bytes", "Payload bytes of live chunks in the tier.", MetricType::kGauge},
    {"kvstash_tier_chunks", "Live chunks in the tier.", MetricType::kGauge},
    {"kvstash_gets_total", "Chunk gets by result and the tier that served them.",
     MetricType::kCounter},
    {"kvstash_puts_total", "Chunks committed to a tier (nvme: written through at put).",
     MetricType::kCounter},
    {"kvstash_deletes_total", "Chunks deleted by clients.", MetricType::kCounter},
    {"kvstash_evictions_total", "Chunks evicted from a tier to stay within its budget.",
     MetricType::kCounter},
    {"kvstash_demotions_total",
     "DRAM chunks headed for NVMe, by outcome (written: after eviction; cleaned: ahead of "
     "eviction; dropped: queue full too long; failed: write error; declined: refused by "
     "NVMe admission, read fewer than nvme.admission_min_hits times).",
     MetricType::kCounter},
    {"kvstash_demotion_queue_depth", "Evicted chunks queued or being written to NVMe.",
     MetricType::kGauge},
    {"kvstash_promotions_total", "NVMe hits copied into DRAM.", MetricType::kCounter},
    {"kvstash_checksum_failures_total", "Reads whose checksum did not match (chunk dropped).",
     MetricType::kCounter},
    {"kvstash_io_errors_total", "Failed tier reads, writes, deletes and compactions.",
     MetricType::kCounter},
    {"kvstash_recovered_chunks", "Chunks found in the tier at start-up.", MetricType::kGauge},
    {"kvstash_tier_writes_suspended",
     "1 while the tier refuses writes after an I/O error (it reopens once space is back).",
     MetricType::kGauge},
    {"kvstash_tier_reopens_total",
     "Times the tier reopened its database and resumed writing after an I/O error.",
     MetricType::kCounter},
    {"kvstash_gc_runs_total", "Blob garbage-collection runs of the tier.", MetricType::kCounter},
    {"kvstash_gc_waits_total",
     "Writes (demotions, write-throughs) that waited for garbage collection because live "
     "plus uncollected bytes neared the budget.",
     MetricType::kCounter},
    {"kvstash_hint_drops_total",
     "Protected chunks (high priority, TTL, session) evicted from DRAM because nothing less "
     "protected was left.",
     MetricType::kCounter},
    {"kvstash_quota_evictions_total",
     "Chunks evicted to keep their tenant within its DRAM or NVMe quota.", MetricType::kCounter},
    {"kvstash_pin_quota_refusals_total", "Pins refused by the tenant's pin quota.",
     MetricType::kCounter},
    {"kvstash_pinned_bytes", "Payload bytes of pinned chunks.", MetricType::kGauge},
    {"kvstash_sessions", "Active sessions (not ended, not idle past the timeout).",
     MetricType::kGauge},
};

enum NsFamily {
  kNsChunks,
  kNsBytes,
  kNsGets,
  kNsPuts,
  kNsEvictions,
  kNsLookupHits,
  kNsOmitted,
  kNsFamilyCount
};
constexpr FamilyDef kNsFamilies[kNsFamilyCount] = {
    {"kvstash_namespace_chunks", "Live chunks of the namespace.", MetricType::kGauge},
    {"kvstash_namespace_bytes", "Payload bytes of the namespace's live chunks.",
     MetricType::kGauge},
    {"kvstash_namespace_gets_total", "Chunk gets of the namespace by result.",
     MetricType::kCounter},
    {"kvstash_namespace_puts_total", "Chunks of the namespace committed.", MetricType::kCounter},
    {"kvstash_namespace_evictions_total", "Chunks of the namespace evicted.", MetricType::kCounter},
    {"kvstash_namespace_lookup_hit_chunks_total", "Lookup hits in the namespace.",
     MetricType::kCounter},
    {"kvstash_namespaces_omitted", "Namespaces left out by metrics.max_namespaces.",
     MetricType::kGauge},
};

template <size_t N>
std::vector<Family> Declare(const FamilyDef (&defs)[N]) {
  std::vector<Family> f(N);
  for (size_t i = 0; i < N; ++i) f[i] = {defs[i].name, defs[i].help, defs[i].type, {}};
  return f;
}

void Add(Family& f, Labels labels, double value) {
  f.samples.push_back({std::move(labels), value, {}});
}

// "family{k=\"v\",...}" as written in kvstash/stats_counters.h.
struct Series {
  absl::string_view family;
  Labels labels;
};

Series ParseSeries(absl::string_view selector) {
  Series out;
  const size_t brace = selector.find('{');
  out.family = selector.substr(0, brace);
  if (brace == absl::string_view::npos) return out;
  absl::string_view body = absl::StripSuffix(selector.substr(brace + 1), "}");
  for (absl::string_view pair : absl::StrSplit(body, ',')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(pair, '=');
    out.labels.emplace_back(kv.first, absl::StripSuffix(absl::StripPrefix(kv.second, "\""), "\""));
  }
  return out;
}

Family& FamilyNamed(std::vector<Family>& f, absl::string_view name) {
  for (Family& family : f) {
    if (family.name == name) return family;
  }
  // Only a typo in stats_counters.h gets here; store_metrics_test catches it.
  std::abort();
}

// A counter struct's series, parsed from kvstash/stats_counters.h's selectors.
template <typename Struct>
using SeriesOf = std::vector<std::pair<Series, uint64_t Struct::*>>;

template <typename Struct, size_t N>
const SeriesOf<Struct>& ParseAll(const std::pair<const char*, uint64_t Struct::*> (&defs)[N]) {
  auto* parsed = new SeriesOf<Struct>();
  for (const auto& [selector, member] : defs) parsed->emplace_back(ParseSeries(selector), member);
  return *parsed;
}

void CollectTierStats(const storage::TierStats& t, std::vector<Family>& f) {
  static constexpr std::pair<const char*, uint64_t storage::TierStats::*> kDefs[] = {
#define KVSTASH_SERIES(name, kind, metric, ...) {metric, &storage::TierStats::name},
      KVSTASH_TIER_STATS(KVSTASH_SERIES)
#undef KVSTASH_SERIES
  };
  static const SeriesOf<storage::TierStats>& kSeries = ParseAll(kDefs);  // once per process
  for (const auto& [series, member] : kSeries) {
    Labels labels = series.labels;
    labels.emplace_back("tier", TierName(t.tier));
    Add(FamilyNamed(f, series.family), std::move(labels), t.*member);
  }
}

void CollectNvme(const storage::NvmeCounters& n, bool nvme, std::vector<Family>& f) {
  static constexpr std::pair<const char*, uint64_t storage::NvmeCounters::*> kDefs[] = {
#define KVSTASH_SERIES(name, client, kind, cli, metric, ...) {metric, &storage::NvmeCounters::name},
      KVSTASH_NVME_COUNTERS(KVSTASH_SERIES)
#undef KVSTASH_SERIES
  };
  static const SeriesOf<storage::NvmeCounters>& kSeries = ParseAll(kDefs);
  for (const auto& [series, member] : kSeries) {
    if (series.family.empty()) continue;
    // Without an NVMe tier its series would all be zero; the queue depth is still exported,
    // as dashboards sum it.
    if (!nvme && series.family != kStoreFamilies[kQueueDepth].name) continue;
    Add(FamilyNamed(f, series.family), series.labels, n.*member);
  }
}

void CollectTiers(const storage::StoreStats& s, std::vector<Family>& f) {
  bool nvme = false;
  for (const storage::TierStats& t : s.tiers) {
    nvme |= t.tier == storage::Tier::kNvme;
    CollectTierStats(t, f);
  }
  Add(f[kGets], {{"result", "miss"}, {"tier", "none"}}, s.total.misses);
  Add(f[kPuts], {{"tier", "dram"}}, s.total.puts);
  Add(f[kDeletes], {}, s.total.deletes);
  Add(f[kEvictions], {{"tier", "dram"}}, s.total.evictions);
  Add(f[kHintDrops], {}, s.total.hint_drops);
  Add(f[kQuotaEvictions], {}, s.total.quota_evictions);
  Add(f[kPinQuotaRefusals], {}, s.total.pin_quota_refusals);
  Add(f[kPinnedBytes], {}, s.total.pinned_bytes);
  Add(f[kSessions], {}, s.total.sessions);
  CollectNvme(s.nvme, nvme, f);
}

void CollectNamespaces(const storage::ChunkStore& store, const NamespaceRegistry& registry,
                       uint32_t max_namespaces, std::vector<Family>& f) {
  std::vector<std::pair<Key128, storage::CounterSnapshot>> all = store.AllNamespaceCounters();
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second.bytes != b.second.bytes ? a.second.bytes > b.second.bytes : a.first < b.first;
  });
  const size_t shown = std::min<size_t>(all.size(), max_namespaces);
  absl::flat_hash_map<Key128, v1::NamespaceSpec> specs;
  for (auto& [id, spec] : registry.All()) specs[id] = std::move(spec);
  for (size_t i = 0; i < shown; ++i) {
    const auto& [id, c] = all[i];
    const v1::NamespaceSpec& spec = specs[id];
    const Labels l = {
        {"namespace", KeyToHex(id)}, {"tenant", spec.tenant()}, {"model", spec.model_id()}};
    auto with = [&](const char* k, const char* v) {
      Labels r = l;
      r.emplace_back(k, v);
      return r;
    };
    Add(f[kNsChunks], l, c.chunks);
    Add(f[kNsBytes], l, c.bytes);
    Add(f[kNsGets], with("result", "hit"), c.hits);
    Add(f[kNsGets], with("result", "miss"), c.misses);
    Add(f[kNsPuts], l, c.puts);
    Add(f[kNsEvictions], l, c.evictions);
    Add(f[kNsLookupHits], l, c.lookup_hit_chunks);
  }
  Add(f[kNsOmitted], {}, all.size() - shown);
}

}  // namespace

void CollectStoreStats(const storage::StoreStats& stats, std::vector<Family>* out) {
  std::vector<Family> f = Declare(kStoreFamilies);
  CollectTiers(stats, f);
  for (Family& family : f) out->push_back(std::move(family));
}

void CollectStoreMetrics(const storage::ChunkStore& store, const NamespaceRegistry& registry,
                         const StoreMetricsOptions& options, std::vector<Family>* out) {
  CollectStoreStats(store.Stats(), out);
  if (!options.namespace_labels) return;
  std::vector<Family> ns = Declare(kNsFamilies);
  CollectNamespaces(store, registry, options.max_namespaces, ns);
  for (Family& family : ns) out->push_back(std::move(family));
}

}  // namespace kvstash::server
