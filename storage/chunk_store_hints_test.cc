// ChunkStore with application hints (priority, TTL, sessions, pins) and tenant quotas, with
// and without the NVMe tier; and the admin calls (ClearNamespace, NamespaceUsages).
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "storage/chunk_store.h"
#include "storage/nvme/nvme_test_util.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::MakeId;
using testing::Pattern;
using testing::ScratchDir;

constexpr uint64_t kPage = 64 << 10;
constexpr uint64_t kChunk = 60 << 10;  // one DRAM page each
constexpr uint64_t kDramChunks = 8;

class ChunkStoreHintsTest : public ::testing::Test {
 protected:
  ChunkStoreOptions Options() {
    ChunkStoreOptions o;
    o.page_bytes = kPage;
    o.dram_capacity_bytes = kDramChunks * kPage;
    o.huge_pages = ChunkStoreOptions::HugePages::kOff;
    o.index_shards = 4;
    o.tenants.pin_quota_bytes = 3 * kChunk;
    o.sessions.idle_timeout_ms = 60000;
    o.clock = [this] { return now_; };
    return o;
  }
  // Only evictions are written to NVMe (waiting for room, never dropped), and NVMe hits
  // stay there.
  ChunkStoreOptions NvmeOptions() {
    ChunkStoreOptions o = Options();
    o.nvme.path = dir_.path();
    o.nvme.capacity_bytes = 64 << 20;
    o.nvme.demotion_queue_chunks = 64;
    o.nvme.demotion_wait_ms = 60000;
    o.nvme.promote_on_hit = false;
    o.nvme.clean_window_percent = 0;
    return o;
  }
  void Open(const ChunkStoreOptions& o) {
    auto store = ChunkStore::Create(o);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  absl::Status Put(const ChunkId& id, const PutHints& hints = {}) {
    const std::vector<uint8_t> data = Pattern(id.key[0], kChunk);
    ChunkMeta meta;
    meta.size_bytes = kChunk;
    auto pending = store_->BeginPut(id, meta, hints);
    if (!pending.ok()) return pending.status();
    if (absl::Status s = (*pending)->Append(data.data(), data.size()); !s.ok()) return s;
    return store_->CommitPut(*std::move(pending));
  }
  // Puts chunks [first, first + n) of namespace `ns`, each after demotion caught up.
  void PutRange(uint64_t first, uint64_t n, uint64_t ns = 1, const PutHints& hints = {}) {
    for (uint64_t i = first; i < first + n; ++i) {
      ASSERT_TRUE(Put(MakeId(i, ns), hints).ok()) << i;
      ASSERT_TRUE(WaitForDemotions());
    }
  }
  bool WaitForDemotions() {
    for (int i = 0; i < 1000; ++i) {
      if (store_->Stats().nvme.demotions_pending == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  Tier Where(uint64_t n, uint64_t ns = 1) { return store_->Locate(MakeId(n, ns)); }
  std::vector<Key128> Keys(uint64_t first, uint64_t n) {
    std::vector<Key128> keys;
    for (uint64_t i = first; i < first + n; ++i) keys.push_back(MakeId(i).key);
    return keys;
  }
  CounterSnapshot Counters(uint64_t ns = 1) { return store_->NamespaceCounters(MakeId(0, ns).ns); }
  NamespaceUsage UsageOf(uint64_t ns) {
    for (const NamespaceUsage& u : store_->NamespaceUsages()) {
      if (u.ns == MakeId(0, ns).ns) return u;
    }
    return {};
  }

  absl::Time now_ = absl::FromUnixSeconds(1000);
  ScratchDir dir_;
  std::unique_ptr<ChunkStore> store_;
};

PutHints Priority(Priority p) {
  PutHints h;
  h.priority = p;
  return h;
}

TEST_F(ChunkStoreHintsTest, LowGoesBeforeNormalBeforeHigh) {
  Open(Options());
  PutRange(0, 2, 1, Priority(Priority::kHigh));  // oldest, yet kept longest
  PutRange(2, 3);
  PutRange(5, 3, 1, Priority(Priority::kLow));  // newest, yet evicted first
  PutRange(10, 3);
  for (uint64_t i = 5; i < 8; ++i) EXPECT_EQ(Where(i), Tier::kNone) << i;
  for (uint64_t i : {0, 1, 2, 3, 4}) EXPECT_EQ(Where(i), Tier::kDram) << i;
  PutRange(20, 3);  // the oldest normal chunks go, never the high ones
  for (uint64_t i : {2, 3, 4}) EXPECT_EQ(Where(i), Tier::kNone) << i;
  EXPECT_EQ(Where(0), Tier::kDram);
  EXPECT_EQ(Where(1), Tier::kDram);
  EXPECT_EQ(Counters().hint_drops, 0u);
}

TEST_F(ChunkStoreHintsTest, TtlProtectsUntilItRunsOut) {
  Open(Options());
  PutHints ttl;
  ttl.ttl_ms = 1000;
  ASSERT_TRUE(Put(MakeId(0), ttl).ok());
  PutRange(1, 20);
  EXPECT_EQ(Where(0), Tier::kDram);
  now_ += absl::Milliseconds(999);
  PutRange(21, 10);
  EXPECT_EQ(Where(0), Tier::kDram);
  now_ += absl::Milliseconds(1);  // expired: an ordinary chunk from now on
  PutRange(31, kDramChunks);
  EXPECT_EQ(Where(0), Tier::kNone);
  EXPECT_EQ(Counters().hint_drops, 0u);
}

TEST_F(ChunkStoreHintsTest, SessionChunksAreKeptUntilTheSessionEnds) {
  Open(Options());
  PutHints session;
  session.session_id = 7;
  PutRange(0, 2, 1, session);
  ASSERT_TRUE(Put(MakeId(2)).ok());
  // A lookup with the session id joins its hits to the session.
  EXPECT_EQ(store_->Lookup(MakeId(0).ns, Keys(0, 3), absl::ZeroDuration(), 7).hit_count, 3u);
  EXPECT_EQ(store_->Stats().total.sessions, 1u);
  PutRange(10, 20);
  for (uint64_t i : {0, 1, 2}) EXPECT_EQ(Where(i), Tier::kDram) << i;
  store_->EndSession(MakeId(0).ns, 7);
  EXPECT_EQ(store_->Stats().total.sessions, 0u);
  PutRange(30, kDramChunks);
  for (uint64_t i : {0, 1, 2}) EXPECT_EQ(Where(i), Tier::kNone) << i;
  EXPECT_EQ(Counters().hint_drops, 0u);
}

TEST_F(ChunkStoreHintsTest, IdleSessionsEnd) {
  Open(Options());
  PutHints session;
  session.session_id = 9;
  PutRange(0, 2, 1, session);
  PutRange(10, 20);
  EXPECT_EQ(Where(0), Tier::kDram);
  now_ += absl::Milliseconds(60000);
  EXPECT_EQ(store_->Stats().total.sessions, 0u);
  PutRange(30, kDramChunks);
  EXPECT_EQ(Where(0), Tier::kNone);
  EXPECT_EQ(Where(1), Tier::kNone);
}

TEST_F(ChunkStoreHintsTest, ChunkCommittedAfterItsSessionIdledOutIsNotKeptForever) {
  Open(Options());
  PutHints session;
  session.session_id = 9;
  const std::vector<uint8_t> data = Pattern(0, kChunk);
  ChunkMeta meta;
  meta.size_bytes = kChunk;
  auto pending = store_->BeginPut(MakeId(0), meta, session);
  ASSERT_TRUE(pending.ok());
  ASSERT_TRUE((*pending)->Append(data.data(), data.size()).ok());
  now_ += absl::Milliseconds(60000);
  // Another session's lookup ends session 9 (idle) before the commit.
  store_->Lookup(MakeId(0).ns, Keys(5, 1), absl::ZeroDuration(), 10);
  ASSERT_TRUE(store_->CommitPut(*std::move(pending)).ok());
  PutRange(10, kDramChunks - 1);
  EXPECT_EQ(Where(0), Tier::kDram);  // the commit resumed the session
  now_ += absl::Milliseconds(60000);
  PutRange(20, kDramChunks);
  EXPECT_EQ(Where(0), Tier::kNone);
}

TEST_F(ChunkStoreHintsTest, SessionChunksAreDemotedNotDropped) {
  Open(NvmeOptions());
  PutHints session;
  session.session_id = 3;
  PutRange(0, 3 * kDramChunks, 1, session);  // only session chunks: DRAM must evict some
  for (uint64_t i = 0; i < 3 * kDramChunks; ++i) EXPECT_NE(Where(i), Tier::kNone) << i;
  EXPECT_EQ(Where(0), Tier::kNvme);
  EXPECT_GE(store_->Stats().nvme.demotions, 2 * kDramChunks);
}

TEST_F(ChunkStoreHintsTest, PinsHoldWithinTheQuota) {
  Open(Options());
  PutRange(0, 5);
  auto pinned = store_->Pin(MakeId(0).ns, Keys(0, 3), true);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(*pinned, 3u);
  EXPECT_EQ(*store_->Pin(MakeId(0).ns, Keys(0, 3), true), 0u);  // already pinned
  PutRange(10, 30);
  for (uint64_t i : {0, 1, 2}) EXPECT_EQ(Where(i), Tier::kDram) << i;
  EXPECT_EQ(Counters().pinned_bytes, 3 * kChunk);
  EXPECT_EQ(UsageOf(1).pinned_bytes, 3 * kChunk);
  // Past the quota: refused as a call, stored unpinned as a put.
  EXPECT_EQ(store_->Pin(MakeId(0).ns, Keys(39, 1), true).status().code(),
            absl::StatusCode::kResourceExhausted);
  PutHints pin;
  pin.pin = true;
  ASSERT_TRUE(Put(MakeId(50), pin).ok());
  EXPECT_EQ(Counters().pin_quota_refusals, 2u);
  EXPECT_EQ(Counters().pinned_bytes, 3 * kChunk);
  // Unpinning stops at the first absent key and frees the quota.
  std::vector<Key128> keys = Keys(0, 2);
  keys.push_back(MakeId(99).key);
  keys.push_back(MakeId(2).key);
  EXPECT_EQ(*store_->Pin(MakeId(0).ns, keys, false), 2u);
  EXPECT_EQ(Counters().pinned_bytes, kChunk);
  ASSERT_TRUE(Put(MakeId(51), pin).ok());
  EXPECT_EQ(Counters().pinned_bytes, 2 * kChunk);
  PutRange(60, kDramChunks);
  EXPECT_EQ(Where(0), Tier::kNone);
  EXPECT_EQ(Where(2), Tier::kDram);
  EXPECT_EQ(Where(51), Tier::kDram);
}

TEST_F(ChunkStoreHintsTest, HintsNeverBreakTheBudget) {
  Open(Options());
  PutHints ttl;
  ttl.ttl_ms = 100000;
  ttl.priority = Priority::kLow;
  PutHints session;
  session.session_id = 5;
  PutRange(0, 3, 1, Priority(Priority::kHigh));
  PutRange(3, 3, 1, ttl);
  PutRange(6, 2, 1, session);
  // Only protected chunks left: they go, least protected first, and each is counted.
  PutRange(10, 3, 1, session);
  for (uint64_t i : {0, 1, 2}) EXPECT_EQ(Where(i), Tier::kNone) << i;
  for (uint64_t i = 3; i < 8; ++i) EXPECT_EQ(Where(i), Tier::kDram) << i;
  PutRange(13, 4, 1, session);
  for (uint64_t i = 3; i < 6; ++i) EXPECT_EQ(Where(i), Tier::kNone) << i;
  EXPECT_EQ(Counters().hint_drops, 7u);
  const TierStats dram = store_->Stats().tiers.at(0);
  EXPECT_LE(dram.used_bytes, dram.capacity_bytes);
  EXPECT_EQ(dram.chunks, kDramChunks);
}

TEST_F(ChunkStoreHintsTest, TenantQuotaEvictsOnlyTheTenantsOwnChunks) {
  ChunkStoreOptions o = Options();
  o.tenants.overrides = "a:dram=240KiB;b:dram=240KiB";  // 4 chunks each
  Open(o);
  store_->SetNamespaceTenant(MakeId(0, 1).ns, "a");
  store_->SetNamespaceTenant(MakeId(0, 2).ns, "b");
  PutRange(0, 4, 2);
  PutRange(0, 10, 1);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_EQ(Where(i, 2), Tier::kDram) << i;
  for (uint64_t i = 6; i < 10; ++i) EXPECT_EQ(Where(i, 1), Tier::kDram) << i;
  EXPECT_EQ(Counters(1).quota_evictions, 6u);
  EXPECT_EQ(Counters(2).quota_evictions, 0u);
  EXPECT_EQ(UsageOf(1).Of(Tier::kDram).chunks, 4u);
  EXPECT_EQ(UsageOf(1).tenant, "a");
}

TEST_F(ChunkStoreHintsTest, PutThatCanNeverFitTheTenantsQuotaEvictsNothing) {
  ChunkStoreOptions o = Options();
  o.tenants.overrides = "a:dram=200KiB,pin=120KiB";  // 3 chunks, 2 of them pinnable
  Open(o);
  store_->SetNamespaceTenant(MakeId(0, 1).ns, "a");
  PutRange(0, 3, 1);
  ASSERT_EQ(*store_->Pin(MakeId(0).ns, Keys(0, 2), true), 2u);
  // One chunk left of the quota after the pins: 2 more could never fit, so none goes.
  ChunkMeta meta;
  meta.size_bytes = 2 * kChunk;
  auto pending = store_->BeginPut(MakeId(9), meta, PutHints{});
  EXPECT_EQ(pending.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(pending.status().message().find("\"a\""), absl::string_view::npos);
  EXPECT_EQ(Where(2), Tier::kDram);
  EXPECT_EQ(Counters(1).quota_evictions, 0u);
  meta.size_bytes = 4 * kChunk;  // above the quota itself
  EXPECT_EQ(store_->BeginPut(MakeId(9), meta, PutHints{}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(Counters(1).quota_evictions, 0u);
}

TEST_F(ChunkStoreHintsTest, PromotionsStayWithinTheTenantsDramQuota) {
  ChunkStoreOptions o = NvmeOptions();
  o.nvme.promote_on_hit = true;
  o.tenants.overrides = "a:dram=240KiB";  // 4 chunks
  Open(o);
  store_->SetNamespaceTenant(MakeId(0, 1).ns, "a");
  PutRange(0, 8, 1);
  ASSERT_EQ(UsageOf(1).Of(Tier::kDram).chunks, 4u);
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(Where(i), Tier::kNvme) << i;
    ASSERT_TRUE(store_->Get(MakeId(i)).ok()) << i;  // promoted: DRAM has room, the tenant not
    EXPECT_LE(UsageOf(1).Of(Tier::kDram).chunks, 4u) << i;
    ASSERT_TRUE(WaitForDemotions());
  }
  EXPECT_GT(store_->Stats().nvme.promotions, 0u);
  // A pin promotes through the same quota.
  uint64_t below = 0;
  while (below < 8 && Where(below) != Tier::kNvme) ++below;
  ASSERT_LT(below, 8u);
  EXPECT_EQ(*store_->Pin(MakeId(0).ns, Keys(below, 1), true), 1u);
  EXPECT_EQ(Where(below), Tier::kDram);
  EXPECT_LE(UsageOf(1).Of(Tier::kDram).chunks, 4u);
}

TEST_F(ChunkStoreHintsTest, TenantNvmeQuotaEvictsItsOwnNvmeChunks) {
  ChunkStoreOptions o = NvmeOptions();
  o.nvme.write_through = true;            // every put lands on NVMe before it is acknowledged
  o.dram_capacity_bytes = 64 * kPage;     // no DRAM eviction: no demotion races the check
  o.tenants.overrides = "a:nvme=300KiB";  // 5 chunks
  Open(o);
  store_->SetNamespaceTenant(MakeId(0, 1).ns, "a");
  PutRange(0, 6, 2);  // tenant "default": no quota
  for (uint64_t i = 0; i < 30; ++i) {
    ASSERT_TRUE(Put(MakeId(i, 1)).ok()) << i;
    ASSERT_LE(UsageOf(1).Of(Tier::kNvme).bytes, 5 * kChunk) << i;
  }
  EXPECT_EQ(UsageOf(1).Of(Tier::kNvme).chunks, 5u);
  EXPECT_EQ(Counters(1).quota_evictions, 25u);
  EXPECT_EQ(UsageOf(2).Of(Tier::kNvme).chunks, 6u);
}

TEST_F(ChunkStoreHintsTest, NvmeQuotaLeavesNamespacesUnboundSinceARestartAlone) {
  ChunkStoreOptions o = NvmeOptions();
  o.nvme.write_through = true;
  o.dram_capacity_bytes = 64 * kPage;
  o.tenants.nvme_quota_bytes = 300 * 1024;  // 5 chunks per tenant
  o.tenants.overrides = "a:nvme=0";         // none for "a"
  Open(o);
  store_->SetNamespaceTenant(MakeId(0, 1).ns, "a");
  PutRange(0, 10, 1);
  ASSERT_EQ(UsageOf(1).Of(Tier::kNvme).chunks, 10u);
  store_.reset();
  Open(o);  // the bindings are gone, the NVMe chunks are not
  store_->SetNamespaceTenant(MakeId(0, 2).ns, "");
  PutRange(0, 8, 2);
  EXPECT_EQ(UsageOf(1).Of(Tier::kNvme).chunks, 10u);  // not the default tenant's to evict
  EXPECT_EQ(UsageOf(2).Of(Tier::kNvme).chunks, 5u);
  store_->SetNamespaceTenant(MakeId(0, 1).ns, "");  // bound now: counted
  ASSERT_TRUE(Put(MakeId(20, 2)).ok());
  EXPECT_LE(UsageOf(1).Of(Tier::kNvme).chunks + UsageOf(2).Of(Tier::kNvme).chunks, 5u);
}

TEST_F(ChunkStoreHintsTest, ClearNamespaceDeletesEveryTier) {
  Open(NvmeOptions());
  PutRange(0, 20, 1);
  PutRange(0, 3, 2);
  ASSERT_TRUE(WaitForDemotions());
  const NamespaceUsage before = UsageOf(1);
  EXPECT_EQ(before.Chunks(), 20u);
  EXPECT_GT(before.Of(Tier::kNvme).chunks, 0u);
  EXPECT_EQ(store_->ClearNamespace(MakeId(0, 1).ns), 20u);
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(Where(i, 1), Tier::kNone) << i;
  for (uint64_t i = 0; i < 3; ++i) EXPECT_NE(Where(i, 2), Tier::kNone) << i;
  EXPECT_EQ(store_->ClearNamespace(MakeId(0, 1).ns), 0u);
  // Listed: namespaces with chunks or a tenant.
  store_->SetNamespaceTenant(MakeId(0, 3).ns, "t");
  const std::vector<NamespaceUsage> all = store_->NamespaceUsages();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(UsageOf(2).Chunks(), 3u);
  EXPECT_EQ(UsageOf(2).Of(Tier::kDram).bytes + UsageOf(2).Of(Tier::kNvme).bytes, 3 * kChunk);
  EXPECT_EQ(UsageOf(3).tenant, "t");
  EXPECT_EQ(UsageOf(3).Of(Tier::kDram).chunks, 0u);
}

// Puts, lookups and admin calls with every hint from several threads: the budget holds
// throughout, and clearing every namespace leaves nothing behind (no pinned bytes, no
// DRAM in use, no tenant usage that would refuse a put).
TEST_F(ChunkStoreHintsTest, ConcurrentHintsKeepTheBudgetAndTheBooks) {
  ChunkStoreOptions o = Options();
  o.dram_capacity_bytes = 32 * kPage;
  o.tenants.dram_quota_bytes = 20 * kChunk;
  o.tenants.pin_quota_bytes = 4 * kChunk;
  o.clock = {};  // real time: TTLs of a few ms lapse while the threads run
  Open(o);
  store_->SetNamespaceTenant(MakeId(0, 1).ns, "a");
  store_->SetNamespaceTenant(MakeId(0, 2).ns, "b");
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      const uint64_t ns = 1 + t % 3;
      for (uint64_t i = 0; i < 300; ++i) {
        PutHints h;
        h.priority = static_cast<kvstash::Priority>(i % 3);
        h.session_id = i % 4 == 0 ? t + 1 : 0;
        h.ttl_ms = i % 5 == 0 ? 2 : 0;
        h.pin = i % 7 == 0;
        const absl::Status put = Put(MakeId(i + 1000 * t, ns), h);
        EXPECT_TRUE(put.ok() || absl::IsResourceExhausted(put)) << put;
        const Key128 ns_id = MakeId(0, ns).ns;
        const std::vector<Key128> keys = {MakeId(i + 1000 * t, ns).key};
        store_->Lookup(ns_id, keys, absl::ZeroDuration(), t + 1);
        if (i % 50 == 49) store_->EndSession(ns_id, t + 1);
        if (i % 11 == 0) store_->Pin(ns_id, keys, false).IgnoreError();
        if (t == 3 && i % 100 == 99) store_->ClearNamespace(ns_id);
        const TierStats dram = store_->Stats().tiers.at(0);
        EXPECT_LE(dram.used_bytes, dram.capacity_bytes);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (uint64_t ns = 1; ns <= 3; ++ns) {
    EXPECT_LE(UsageOf(ns).pinned_bytes, 4 * kChunk) << ns;
    store_->ClearNamespace(MakeId(0, ns).ns);
  }
  EXPECT_EQ(store_->Stats().total.pinned_bytes, 0u);
  EXPECT_EQ(store_->Stats().tiers.at(0).chunks, 0u);
  // The tenants' books are empty again: a full quota of puts fits without evicting.
  for (uint64_t i = 0; i < 20; ++i) ASSERT_TRUE(Put(MakeId(i, 1)).ok()) << i;
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(Where(i, 1), Tier::kDram) << i;
  PutHints pin;
  pin.pin = true;
  ASSERT_TRUE(Put(MakeId(50, 1), pin).ok());
  EXPECT_EQ(Counters(1).pinned_bytes, kChunk);
}

TEST(ChunkStoreHintsOptionsTest, ErrorsNameTheField) {
  ChunkStoreOptions o;
  o.sessions.idle_timeout_ms = 0;
  EXPECT_NE(o.Validate().message().find("sessions.idle_timeout_ms"), absl::string_view::npos);
  o = ChunkStoreOptions{};
  o.sessions.max_sessions = 0;
  EXPECT_NE(o.Validate().message().find("sessions.max_sessions"), absl::string_view::npos);
  o = ChunkStoreOptions{};
  o.tenants.overrides = "x:dram=big";
  EXPECT_NE(o.Validate().message().find("tenants.overrides"), absl::string_view::npos);
}

}  // namespace
}  // namespace kvstash::storage
