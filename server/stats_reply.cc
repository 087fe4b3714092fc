#include "server/stats_reply.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace kvstash::server {
namespace {

void ToProto(const storage::CounterSnapshot& c, v1::CounterSet* out) {
  out->set_chunks(c.chunks);
  out->set_bytes(c.bytes);
  out->set_hits(c.hits);
  out->set_misses(c.misses);
  out->set_puts(c.puts);
  out->set_evictions(c.evictions);
  out->set_deletes(c.deletes);
  out->set_lookups(c.lookups);
  out->set_lookup_hit_chunks(c.lookup_hit_chunks);
}

void ToProto(const storage::TierStats& t, v1::TierStats* out) {
  out->set_tier(static_cast<v1::Tier>(t.tier));
  out->set_capacity_bytes(t.capacity_bytes);
  out->set_used_bytes(t.used_bytes);
  out->set_chunk_bytes(t.chunk_bytes);
  out->set_chunks(t.chunks);
}

void ToProto(const storage::NvmeCounters& n, v1::NvmeCounters* out) {
  out->set_hits(n.hits);
  out->set_misses(n.misses);
  out->set_evictions(n.evictions);
  out->set_demotions(n.demotions);
  out->set_demotion_drops(n.demotion_drops);
  out->set_demotion_failures(n.demotion_failures);
  out->set_demotions_pending(n.demotions_pending);
  out->set_promotions(n.promotions);
  out->set_write_throughs(n.write_throughs);
  out->set_checksum_failures(n.checksum_failures);
  out->set_io_errors(n.io_errors);
  out->set_recovered_chunks(n.recovered_chunks);
  out->set_gc_runs(n.gc_runs);
  out->set_gc_waits(n.gc_waits);
}

std::string IdBytes(const Key128& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), id.size());
}

}  // namespace

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
    ns->set_namespace_id(IdBytes(id));
    *ns->mutable_spec() = specs[id];
    ToProto(env.store->NamespaceCounters(id), ns->mutable_counters());
  }
  return absl::OkStatus();
}

}  // namespace kvstash::server
