// Store metrics: read from ChunkStore::Stats() (and the namespace counters) at scrape time,
// so the data path pays nothing for them. The families are declared in one list in
// store_metrics.cc; which counter feeds which series is the `metric` column of
// kvstash/stats_counters.h:
//
//   kvstash_tier_capacity_bytes{tier}    gauge, configured budget
//   kvstash_tier_used_bytes{tier}        gauge, allocator bytes in use (slack included)
//   kvstash_tier_bytes{tier}             gauge, payload bytes of live chunks
//   kvstash_tier_chunks{tier}            gauge, live chunks
//   kvstash_gets_total{result,tier}      counter, hit by dram|nvme, miss (tier="none")
//   kvstash_puts_total{tier}             counter, chunks committed to dram; written
//                                        through to nvme
//   kvstash_deletes_total                counter
//   kvstash_evictions_total{tier}        counter, dram (demoted or dropped) and nvme
//   kvstash_demotions_total{result}      counter, written|cleaned|dropped|failed|declined
//   kvstash_demotion_queue_depth         gauge, evicted chunks waiting for NVMe
//   kvstash_promotions_total             counter, NVMe hits copied into DRAM
//   kvstash_checksum_failures_total{tier} counter
//   kvstash_io_errors_total{tier}        counter
//   kvstash_recovered_chunks{tier}       gauge, chunks found on NVMe at start-up
//   kvstash_tier_writes_suspended{tier}  gauge, 1 while writing is stopped after an error
//   kvstash_tier_reopens_total{tier}     counter, reopens that resumed writing
//   kvstash_gc_runs_total{tier}, kvstash_gc_waits_total{tier}  counters
// and, with StoreMetricsOptions::namespace_labels, per namespace (labels namespace,
// tenant, model), at most max_namespaces of them (the largest by bytes):
//   kvstash_namespace_chunks, kvstash_namespace_bytes (gauges),
//   kvstash_namespace_gets_total{result}, kvstash_namespace_puts_total,
//   kvstash_namespace_evictions_total, kvstash_namespace_lookup_hit_chunks_total,
//   kvstash_namespaces_omitted (gauge).
//
// Thread-safety: stateless; safe from any thread (the store and registry are).
#pragma once

#include <cstdint>
#include <vector>

#include "server/metrics/exposition.h"
#include "server/namespace_registry.h"
#include "storage/chunk_store.h"

namespace kvstash::server {

struct StoreMetricsOptions {
  // Export per-namespace series. Off by default: cardinality grows with namespaces.
  bool namespace_labels = false;
  // Most namespaces exported when namespace_labels is on.
  uint32_t max_namespaces = 64;
};

// Appends the families fed by `stats` (every family but the per-namespace ones).
void CollectStoreStats(const storage::StoreStats& stats, std::vector<metrics::Family>* out);

// Appends the store's families (and per-namespace ones when enabled).
void CollectStoreMetrics(const storage::ChunkStore& store, const NamespaceRegistry& registry,
                         const StoreMetricsOptions& options, std::vector<metrics::Family>* out);

}  // namespace kvstash::server
