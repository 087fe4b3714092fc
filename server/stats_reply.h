// The Stats reply: the store's totals, tiers and NVMe counters and the per-namespace
// counters, as a v1::StatsResponse (docs/protocol.md, "Stats").
//
// Thread-safety: stateless; safe from any thread.
#pragma once

#include "absl/status/status.h"
#include "kvstash/v1/kvstash.pb.h"
#include "server/service_env.h"
#include "storage/chunk.h"

namespace kvstash::server {

// Field-by-field copies, expanded from kvstash/stats_counters.h.
void ToProto(const storage::CounterSnapshot& in, v1::CounterSet* out);
void ToProto(const storage::TierStats& in, v1::TierStats* out);
void ToProto(const storage::NvmeCounters& in, v1::NvmeCounters* out);

// Totals and tiers always cover the whole daemon; `namespaces` lists the one asked for, or
// every namespace registered or holding counters (sorted by id, so output is stable).
// NOT_FOUND / INVALID_ARGUMENT for an unknown or malformed namespace id.
absl::Status FillStatsResponse(const ServiceEnv& env, const v1::StatsRequest& req,
                               v1::StatsResponse* resp);

}  // namespace kvstash::server
