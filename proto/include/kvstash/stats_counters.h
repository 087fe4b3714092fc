// The daemon's store counters, each declared once. The storage structs (storage/chunk.h),
// the Stats reply (server/stats_reply.cc), the client's ServerStats and its conversion, the
// `kvstash stats` lines, the Prometheus series (server/store_metrics.cc) and the Python
// stats() dict are all expanded from these lists. Adding a counter is one line here plus
// its field in kvstash.proto (server/stats_reply_test.cc fails when the two differ).
//
// Every value is a uint64 (writes_suspended is 0 or 1). Names are wire, CLI, metric and
// Python names that dashboards and scripts read: never rename one.
//
// Thread-safety: macros and a plain enum.
#pragma once

namespace kvstash {

// Prometheus' distinction: a counter only grows while the daemon runs, a gauge may go down.
enum class StatKind { kCounter, kGauge };

}  // namespace kvstash

// Per-namespace and daemon-wide counters (v1.CounterSet).
// X(name, kind, help)
#define KVSTASH_STORE_COUNTERS(X)                                                         \
  X(chunks, kGauge, "live chunks")                                                        \
  X(bytes, kGauge, "payload bytes of live chunks")                                        \
  X(hits, kCounter, "gets served")                                                        \
  X(misses, kCounter, "gets of absent keys")                                              \
  X(puts, kCounter, "chunks committed (idempotent repeats not counted)")                  \
  X(evictions, kCounter, "chunks evicted to stay within the budget")                      \
  X(deletes, kCounter, "chunks deleted by clients")                                       \
  X(lookups, kCounter, "lookup calls")                                                    \
  X(lookup_hit_chunks, kCounter, "chunks found by lookups")                               \
  X(hint_drops, kCounter,                                                                 \
    "protected chunks (high priority, TTL, session) evicted from DRAM because nothing "   \
    "less protected was left (TTL and session chunks are demoted to NVMe when it is on)") \
  X(quota_evictions, kCounter,                                                            \
    "chunks evicted (DRAM: demoted) to keep their tenant within its DRAM or NVMe quota")  \
  X(pin_quota_refusals, kCounter,                                                         \
    "pins refused by the tenant's pin quota (puts asking for a pin are stored unpinned)") \
  X(pinned_bytes, kGauge, "payload bytes of pinned chunks")                               \
  X(sessions, kGauge, "active sessions (put or lookup with a session id, not ended or idle)")

// One tier's occupancy and hits (v1.TierStats, which also carries the tier itself).
// X(name, kind, metric, help); metric: the Prometheus series, labelled with the tier too.
#define KVSTASH_TIER_STATS(X)                                                                \
  X(capacity_bytes, kGauge, "kvstash_tier_capacity_bytes", "byte budget of the tier")        \
  X(used_bytes, kGauge, "kvstash_tier_used_bytes", "allocator bytes in use, slack included") \
  X(chunk_bytes, kGauge, "kvstash_tier_bytes", "payload bytes of live chunks")               \
  X(chunks, kGauge, "kvstash_tier_chunks", "live chunks")                                    \
  X(hits, kCounter, "kvstash_gets_total{result=\"hit\"}", "gets the tier served")

// NVMe tier and DRAM<->NVMe movement since the daemon started (v1.NvmeCounters); all zero
// when the NVMe tier is off.
// X(name, client, kind, cli, metric, help)
//   client: the ServerStats field and Python stats() key.
//   cli:    the label `kvstash stats` prints before the value; one that starts with a
//           space continues the line above.
//   metric: the Prometheus series carrying the value ("" for none).
#define KVSTASH_NVME_COUNTERS(X)                                                                  \
  X(hits, nvme_hits, kCounter, "nvme hits", "",                                                   \
    "gets served from NVMe (or from the demotion queue; also the NVMe tier's TierStats.hits)")    \
  X(misses, nvme_misses, kCounter, " misses", "", "gets that missed DRAM and NVMe")               \
  X(evictions, nvme_evictions, kCounter, " evictions", "kvstash_evictions_total{tier=\"nvme\"}",  \
    "chunks evicted from NVMe to stay within its budget")                                         \
  X(demotions, demotions, kCounter, "demotions", "kvstash_demotions_total{result=\"written\"}",   \
    "DRAM evictions written to NVMe")                                                             \
  X(demotion_drops, demotion_drops, kCounter, " drops",                                           \
    "kvstash_demotions_total{result=\"dropped\"}",                                                \
    "DRAM evictions dropped: queue full past demotion_wait_ms")                                   \
  X(demotion_failures, demotion_failures, kCounter, " failures",                                  \
    "kvstash_demotions_total{result=\"failed\"}",                                                 \
    "demotions whose NVMe write failed (also in io_errors)")                                      \
  X(demotions_pending, demotions_pending, kGauge, " pending", "kvstash_demotion_queue_depth",     \
    "demotions queued or being written now")                                                      \
  X(admission_declined, nvme_admission_declined, kCounter, " declined",                           \
    "kvstash_demotions_total{result=\"declined\"}",                                               \
    "DRAM evictions not written: read fewer than nvme.admission_min_hits times")                  \
  X(cleanings, cleanings, kCounter, "cleanings", "kvstash_demotions_total{result=\"cleaned\"}",   \
    "DRAM chunks written to NVMe ahead of eviction")                                              \
  X(promotions, promotions, kCounter, "promotions", "kvstash_promotions_total",                   \
    "NVMe hits copied into DRAM")                                                                 \
  X(write_throughs, write_throughs, kCounter, "write_throughs",                                   \
    "kvstash_puts_total{tier=\"nvme\"}", "puts also written to NVMe at commit")                   \
  X(checksum_failures, checksum_failures, kCounter, "checksum_failures",                          \
    "kvstash_checksum_failures_total{tier=\"nvme\"}",                                             \
    "NVMe reads that failed verification (chunk deleted)")                                        \
  X(io_errors, nvme_io_errors, kCounter, "nvme io_errors",                                        \
    "kvstash_io_errors_total{tier=\"nvme\"}", "failed NVMe reads, writes, deletes, compactions")  \
  X(recovered_chunks, recovered_chunks, kGauge, "recovered_chunks",                               \
    "kvstash_recovered_chunks{tier=\"nvme\"}", "chunks found on NVMe at start-up")                \
  X(reopens, nvme_reopens, kCounter, "nvme reopens", "kvstash_tier_reopens_total{tier=\"nvme\"}", \
    "NVMe database reopened after a write error")                                                 \
  X(writes_suspended, nvme_writes_suspended, kGauge, " writes_suspended",                         \
    "kvstash_tier_writes_suspended{tier=\"nvme\"}",                                               \
    "1 while NVMe writing is stopped after an error")                                             \
  X(gc_runs, nvme_gc_runs, kCounter, "nvme gc_runs", "kvstash_gc_runs_total{tier=\"nvme\"}",      \
    "blob garbage-collection runs")                                                               \
  X(gc_waits, nvme_gc_waits, kCounter, " gc_waits", "kvstash_gc_waits_total{tier=\"nvme\"}",      \
    "NVMe writes that waited for garbage collection near the budget")
