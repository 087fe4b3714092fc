#include "server/stats_reply.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace kvstash::server {

// The store's tiers go on the wire by value.
static_assert(static_cast<int>(storage::Tier::kNone) == v1::TIER_UNSPECIFIED &&
              static_cast<int>(storage::Tier::kGpu) == v1::TIER_GPU &&
              static_cast<int>(storage::Tier::kDram) == v1::TIER_DRAM &&
              static_cast<int>(storage::Tier::kNvme) == v1::TIER_NVME);

#define KVSTASH_SET_FIELD(name, ...) out->set_##name(in.name);

void ToProto(const storage::CounterSnapshot& in, v1::CounterSet* out) {
  KVSTASH_STORE_COUNTERS(KVSTASH_SET_FIELD)
}

void ToProto(const storage::TierStats& in, v1::TierStats* out) {
  out->set_tier(static_cast<v1::Tier>(in.tier));
  KVSTASH_TIER_STATS(KVSTASH_SET_FIELD)
}

void ToProto(const storage::NvmeCounters& in, v1::NvmeCounters* out) {
  KVSTASH_NVME_COUNTERS(KVSTASH_SET_FIELD);
}

#undef KVSTASH_SET_FIELD

absl::Status FillStatsResponse(const ServiceEnv& env, const v1::StatsRequest& req,
                               v1::StatsResponse* resp) {
  const storage::StoreStats stats = env.store->Stats();
  ToProto(stats.total, resp->mutable_total());
  for (const storage::TierStats& t : stats.tiers) ToProto(t, resp->add_tiers());
  ToProto(stats.nvme, resp->mutable_nvme());
  absl::flat_hash_map<Key128, v1::NamespaceSpec> specs;
  if (!req.namespace_id().empty()) {
    absl::StatusOr<Key128> ns = env.registry->Resolve(req.namespace_id());
    if (!ns.ok()) return ns.status();
    specs[*ns] = *env.registry->Find(*ns);
  } else {
    for (auto& [id, spec] : env.registry->All()) specs[id] = std::move(spec);
    for (const auto& [id, counters] : env.store->AllNamespaceCounters()) specs[id];
  }
  std::vector<Key128> ids;
  for (const auto& entry : specs) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (const Key128& id : ids) {
    v1::NamespaceStats* ns = resp->add_namespaces();
    ns->set_namespace_id(KeyToBytes(id));
    *ns->mutable_spec() = specs[id];
    ToProto(env.store->NamespaceCounters(id), ns->mutable_counters());
  }
  return absl::OkStatus();
}

}  // namespace kvstash::server
