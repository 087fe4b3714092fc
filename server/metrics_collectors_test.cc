// The kvstash-specific collectors: transport metrics and store metrics, rendered.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstash/stats_counters.h"
#include "server/auth/call_limiter.h"
#include "server/auth_metrics.h"
#include "server/metrics/exposition.h"
#include "server/metrics/http_server.h"
#include "server/namespace_registry.h"
#include "server/server.h"
#include "server/store_metrics.h"
#include "server/transport_metrics.h"
#include "storage/chunk_store.h"
#include "testing/http_get.h"

namespace kvstash::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<storage::ChunkStore> SmallStore() {
  storage::ChunkStoreOptions o;
  o.dram_capacity_bytes = 4 << 20;
  o.page_bytes = 1 << 20;
  o.prefault_dram = false;
  o.huge_pages = storage::ChunkStoreOptions::HugePages::kOff;
  auto store = storage::ChunkStore::Create(o);
  EXPECT_TRUE(store.ok()) << store.status();
  return std::move(*store);
}

void PutChunk(storage::ChunkStore* store, const Key128& ns, uint8_t key_byte) {
  storage::ChunkId id{ns, {}};
  id.key[0] = key_byte;
  storage::ChunkMeta meta;
  meta.size_bytes = 1000;
  auto pending = store->BeginPut(id, meta);
  ASSERT_TRUE(pending.ok()) << pending.status();
  std::string payload(1000, 'x');
  ASSERT_TRUE((*pending)->Append(payload.data(), payload.size()).ok());
  ASSERT_TRUE(store->CommitPut(std::move(*pending)).ok());
}

TEST(TransportMetricsTest, RendersOpsErrorsAndBytes) {
  TransportMetrics m("grpc");
  const auto start = TransportMetrics::Clock::now();
  m.RecordCall(Op::kGet, 0, start);
  m.RecordCall(Op::kGet, 5, start);  // NOT_FOUND
  m.AddSentBytes(4096);
  m.AddReceivedBytes(100);
  m.CallStarted();
  m.AddPutResult(PutResult::kStored);
  m.AddLookup(8, 3, 3 * 256);
  std::vector<metrics::Family> families;
  m.Collect(&families);
  const std::string text = metrics::RenderText(families);
  EXPECT_THAT(text,
              HasSubstr("kvstash_op_duration_seconds_count{op=\"get\",transport=\"grpc\"} 2\n"));
  EXPECT_THAT(text,
              HasSubstr("kvstash_op_duration_seconds_count{op=\"put\",transport=\"grpc\"} 0\n"));
  EXPECT_THAT(
      text,
      HasSubstr("kvstash_errors_total{op=\"get\",transport=\"grpc\",code=\"NOT_FOUND\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("code=\"OK\"")));
  EXPECT_THAT(text, HasSubstr("kvstash_transport_sent_bytes_total{transport=\"grpc\"} 4096\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_active_calls{transport=\"grpc\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("kvstash_put_chunks_total{transport=\"grpc\",result=\"stored\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_lookup_hit_tokens_total{transport=\"grpc\"} 768\n"));
}

TEST(AuthMetricsTest, CountsFailuresCallsThrottlesAndReloads) {
  TransportMetrics t("ucx");
  t.AddAuthFailure(AuthFailure::kPermissionDenied);
  std::vector<metrics::Family> families;
  t.Collect(&families);
  AuthMetrics m;
  m.AddCall("alice");
  m.AddCall("alice");
  m.AddCall("bob");
  auth::CallLimiter limiter([] { return absl::FromUnixSeconds(1); });
  auth::Principal slow;
  slow.name = "slow";
  slow.limits.max_concurrent_calls = 1;
  absl::StatusOr<auth::CallLimiter::Slot> held = limiter.BeginCall(slow);
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(limiter.BeginCall(slow).ok());
  m.Collect(/*auth=*/nullptr, &limiter, &families);
  const std::string text = metrics::RenderText(families);
  EXPECT_THAT(text, HasSubstr("kvstash_auth_failures_total{transport=\"ucx\",reason="
                              "\"permission_denied\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_auth_failures_total{transport=\"ucx\",reason="
                              "\"unauthenticated\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_principal_calls_total{principal=\"alice\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_principal_calls_total{principal=\"bob\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_principal_throttled_total{principal=\"slow\",kind="
                              "\"concurrency\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_auth_reloads_total{result=\"error\"} 0\n"));
}

TEST(StoreMetricsTest, TiersAndGetsComeFromStats) {
  std::unique_ptr<storage::ChunkStore> store = SmallStore();
  NamespaceRegistry registry;
  const Key128 ns{};
  PutChunk(store.get(), ns, 1);
  ASSERT_TRUE(store->Get({ns, {1}}).ok());
  EXPECT_FALSE(store->Get({ns, {2}}).ok());
  std::vector<metrics::Family> families;
  CollectStoreMetrics(*store, registry, {}, &families);
  const std::string text = metrics::RenderText(families);
  EXPECT_THAT(text, HasSubstr("kvstash_tier_capacity_bytes{tier=\"dram\"} 4194304\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_tier_bytes{tier=\"dram\"} 1000\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_tier_chunks{tier=\"dram\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_gets_total{result=\"hit\",tier=\"dram\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_gets_total{result=\"miss\",tier=\"none\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_puts_total{tier=\"dram\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("kvstash_namespace_")));
}

// Each NVMe counter reaches the series its table line names, with its own value.
TEST(StoreMetricsTest, EveryNvmeCounterReachesItsSeries) {
  storage::StoreStats stats;
  stats.tiers.push_back({storage::Tier::kNvme});
  stats.total.hits = 100;
  uint64_t next = 1;
#define KVSTASH_FILL(name, ...) stats.nvme.name = next++;
  KVSTASH_NVME_COUNTERS(KVSTASH_FILL)
#undef KVSTASH_FILL
  std::vector<metrics::Family> families;
  CollectStoreStats(stats, &families);
  const std::string text = metrics::RenderText(families);
#define KVSTASH_EXPECT(name, client, kind, cli, metric, ...)                              \
  if (absl::string_view(metric).empty()) {                                                \
    EXPECT_THAT(text, Not(HasSubstr(absl::StrCat(" ", stats.nvme.name, "\n")))) << #name; \
  } else {                                                                                \
    EXPECT_THAT(text, HasSubstr(absl::StrCat(metric, " ", stats.nvme.name, "\n")));       \
  }
  KVSTASH_NVME_COUNTERS(KVSTASH_EXPECT)
#undef KVSTASH_EXPECT
}

// Each tier's hits are its own series, whatever tiers the store stacks.
TEST(StoreMetricsTest, EachTierReportsItsHits) {
  storage::StoreStats stats;
  for (const auto& [tier, hits] :
       {std::pair(storage::Tier::kDram, 7), {storage::Tier::kGpu, 8}, {storage::Tier::kNvme, 9}}) {
    storage::TierStats t;
    t.tier = tier;
    t.hits = hits;
    stats.tiers.push_back(t);
  }
  std::vector<metrics::Family> families;
  CollectStoreStats(stats, &families);
  const std::string text = metrics::RenderText(families);
  EXPECT_THAT(text, HasSubstr("kvstash_gets_total{result=\"hit\",tier=\"dram\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_gets_total{result=\"hit\",tier=\"gpu\"} 8\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_gets_total{result=\"hit\",tier=\"nvme\"} 9\n"));
}

TEST(StoreMetricsTest, HintCountersReachTheirSeries) {
  storage::StoreStats stats;
  stats.tiers.push_back({storage::Tier::kDram});
  stats.total.hint_drops = 11;
  stats.total.quota_evictions = 12;
  stats.total.pin_quota_refusals = 13;
  stats.total.pinned_bytes = 14;
  stats.total.sessions = 15;
  std::vector<metrics::Family> families;
  CollectStoreStats(stats, &families);
  const std::string text = metrics::RenderText(families);
  EXPECT_THAT(text, HasSubstr("kvstash_hint_drops_total 11\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_quota_evictions_total 12\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_pin_quota_refusals_total 13\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_pinned_bytes 14\n"));
  EXPECT_THAT(text, HasSubstr("kvstash_sessions 15\n"));
}

TEST(StoreMetricsTest, DramOnlyExportsNoNvmeSeriesButTheQueueDepth) {
  storage::StoreStats stats;
  stats.tiers.push_back({storage::Tier::kDram});
  std::vector<metrics::Family> families;
  CollectStoreStats(stats, &families);
  const std::string text = metrics::RenderText(families);
  EXPECT_THAT(text, HasSubstr("kvstash_demotion_queue_depth 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("tier=\"nvme\"")));
  EXPECT_THAT(text, Not(HasSubstr("kvstash_demotions_total{")));
}

TEST(StoreMetricsTest, NamespaceLabelsAreCapped) {
  std::unique_ptr<storage::ChunkStore> store = SmallStore();
  NamespaceRegistry registry;
  for (uint8_t i = 1; i <= 3; ++i) {
    Key128 ns{};
    ns[0] = i;
    for (uint8_t k = 0; k < i; ++k) PutChunk(store.get(), ns, k);  // namespace i: i chunks
  }
  std::vector<metrics::Family> families;
  CollectStoreMetrics(*store, registry, {/*namespace_labels=*/true, /*max_namespaces=*/2},
                      &families);
  const std::string text = metrics::RenderText(families);
  EXPECT_THAT(text,
              HasSubstr("kvstash_namespace_bytes{namespace=\"03000000000000000000000000000000\""
                        ",tenant=\"\",model=\"\"} 3000\n"));
  EXPECT_THAT(text, HasSubstr("namespace=\"02"));
  EXPECT_THAT(text, Not(HasSubstr("namespace=\"01")));
  EXPECT_THAT(text, HasSubstr("kvstash_namespaces_omitted 1\n"));
}

TEST(ServerProbeTest, ReadyzFollowsTheServerLifecycle) {
  ServerConfig config;
  config.server.grpc_listen = "127.0.0.1:0";
  config.metrics.listen = "127.0.0.1:0";
  config.ucx.enabled = false;
  config.storage.nvme.enabled = false;
  config.storage.dram.capacity_bytes = 8 << 20;
  config.storage.dram.prefault = false;
  config.log.level = LogLevel::kError;
  Logger log(config.log);
  auto server = Server::Create(config, &log);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_FALSE((*server)->ready());
  ASSERT_TRUE((*server)->Start().ok());
  const std::string address = (*server)->metrics_address();
  auto get = [&](const char* path) {
    auto r = HttpGet(address, path);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->status : 0;
  };
  EXPECT_EQ(get("/readyz"), 200);
  EXPECT_THAT((*server)->ScrapeMetrics(), HasSubstr("kvstash_ready 1\n"));
  (*server)->Shutdown(absl::ZeroDuration());
  EXPECT_EQ(get("/readyz"), 503);  // drained: out of rotation, still alive
  EXPECT_EQ(get("/healthz"), 200);
  EXPECT_THAT((*server)->ScrapeMetrics(), HasSubstr("kvstash_ready 0\n"));
}

}  // namespace
}  // namespace kvstash::server
