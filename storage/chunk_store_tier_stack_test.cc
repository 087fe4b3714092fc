// The tier seam: a third tier, defined here, stacked between DRAM and NVMe without any
// change to the store. DRAM's evictions land in it, its own evictions go on to NVMe, and
// gets, lookups, deletes, namespace clears and stats reach all three tiers.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "storage/chunk_store_impl.h"
#include "storage/nvme/nvme_test_util.h"
#include "storage/nvme/nvme_tier.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::HasPattern;
using testing::MakeId;
using testing::PutPattern;
using testing::ScratchDir;

constexpr uint64_t kPage = 64 << 10;
constexpr uint64_t kChunk = 60 << 10;  // one DRAM page each
constexpr uint64_t kDramPages = 16;
constexpr size_t kMiddleChunks = 4;
constexpr uint64_t kCount = 40;

// A chunk holding its own copy of another's bytes and metadata.
class CopiedChunk final : public StoredChunk {
 public:
  explicit CopiedChunk(const StoredChunk& from) : meta_(from.meta()) {
    for (const Segment& s : from.segments()) bytes_.insert(bytes_.end(), s.data, s.data + s.size);
    segment_ = {bytes_.data(), bytes_.size()};
  }
  const ChunkMeta& meta() const override { return meta_; }
  absl::Span<const Segment> segments() const override { return {&segment_, 1}; }

 private:
  const ChunkMeta meta_;
  std::vector<uint8_t> bytes_;
  Segment segment_;
};

// An in-memory tier of `capacity` chunks that evicts its oldest to the tier below. Reports
// its chunks as Tier::kGpu, standing in for a staging tier, so tests can tell it apart;
// its reads are `promotable` or not.
class MemoryTier final : public LowerTier {
 public:
  MemoryTier(size_t capacity, bool promotable) : capacity_(capacity), promotable_(promotable) {}

  void Attach(const TierEnv& env) override { env_ = env; }
  Tier kind() const override { return Tier::kGpu; }
  bool blocking() const override { return false; }
  bool Contains(const ChunkId& id) const override {
    absl::MutexLock lock(&mu_);
    return Find(id) != nullptr;
  }
  void Admit(const EvictedEntry& evicted, ChunkRef chunk) override {
    std::vector<std::pair<EvictedEntry, ChunkRef>> spilled;
    {
      absl::MutexLock lock(&mu_);
      chunks_.push_back({evicted, std::make_shared<CopiedChunk>(*chunk)});
      while (chunks_.size() > capacity_) {
        spilled.push_back(std::move(chunks_.front()));
        chunks_.pop_front();
      }
    }
    for (auto& [entry, copy] : spilled) {
      if (env_.below != nullptr) env_.below->Admit(entry, std::move(copy));
    }
  }
  void Committed(const ChunkId&, const StoredChunk&) override {}
  TierRead Get(const ChunkId& id, bool for_get) override {
    absl::MutexLock lock(&mu_);
    ChunkRef chunk = Find(id);
    if (chunk != nullptr && for_get) ++hits_;
    return {std::move(chunk), promotable_};
  }
  bool Delete(const ChunkId& id) override {
    return RemoveIf([&](const ChunkId& c) { return c == id; }) > 0;
  }
  void Clear(const Key128& ns, absl::flat_hash_set<ChunkId>* cleared) override {
    RemoveIf([&](const ChunkId& c) {
      if (c.ns != ns) return false;
      cleared->insert(c);
      return true;
    });
  }
  void DramEvicting() override {}
  void AfterEvictions() override {}
  void AddUsage(absl::flat_hash_map<Key128, NamespaceUsage>* usage) const override {
    absl::flat_hash_map<Key128, TierUsage> mine;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [entry, chunk] : chunks_) {
        TierUsage& u = mine[entry.id.ns];
        u.tier = kind();
        ++u.chunks;
        u.bytes += chunk->meta().size_bytes;
      }
    }
    for (const auto& [ns, u] : mine) (*usage)[ns].tiers.push_back(u);
  }
  void Report(StoreStats* stats) const override {
    absl::MutexLock lock(&mu_);
    TierStats t;
    t.tier = kind();
    t.chunks = chunks_.size();
    t.hits = hits_;
    stats->tiers.push_back(t);
  }

 private:
  template <typename Match>
  size_t RemoveIf(Match match) {
    absl::MutexLock lock(&mu_);
    const size_t before = chunks_.size();
    chunks_.erase(std::remove_if(chunks_.begin(), chunks_.end(),
                                 [&](const auto& c) { return match(c.first.id); }),
                  chunks_.end());
    return before - chunks_.size();
  }

  ChunkRef Find(const ChunkId& id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [entry, chunk] : chunks_) {
      if (entry.id == id) return chunk;
    }
    return nullptr;
  }

  const size_t capacity_;
  const bool promotable_;
  TierEnv env_;
  mutable absl::Mutex mu_;
  std::deque<std::pair<EvictedEntry, ChunkRef>> chunks_ ABSL_GUARDED_BY(mu_);
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
};

class TierStackTest : public ::testing::Test {
 protected:
  void SetUp() override { Build(/*promote_on_hit=*/false, /*promotable=*/true); }

  // The stack DRAM / MemoryTier / NVMe, replacing any built before.
  void Build(bool promote_on_hit, bool promotable) {
    store_.reset();
    options_ = ChunkStoreOptions();
    options_.page_bytes = kPage;
    options_.dram_capacity_bytes = kDramPages * kPage;
    options_.huge_pages = ChunkStoreOptions::HugePages::kOff;
    options_.index_shards = 4;
    dir_ = std::make_unique<ScratchDir>();
    options_.nvme.path = dir_->path();
    options_.nvme.capacity_bytes = 64 << 20;
    options_.nvme.demotion_queue_chunks = 64;
    options_.nvme.clean_window_percent = 0;  // only evictions move down
    options_.nvme.promote_on_hit = promote_on_hit;
    ASSERT_TRUE(options_.Validate().ok());
    auto dram = DramAllocator::Create(options_.dram_capacity_bytes, kPage,
                                      ChunkStoreOptions::HugePages::kOff, /*prefault=*/false);
    ASSERT_TRUE(dram.ok()) << dram.status();
    auto index = ChunkIndex::Create(options_.index_shards, options_.dram_eviction);
    ASSERT_TRUE(index.ok()) << index.status();
    auto nvme = NvmeTier::Open(options_.nvme);
    ASSERT_TRUE(nvme.ok()) << nvme.status();
    auto middle = std::make_unique<MemoryTier>(kMiddleChunks, promotable);
    middle_ = middle.get();
    std::vector<std::unique_ptr<LowerTier>> below;
    below.push_back(std::move(middle));
    below.push_back(*std::move(nvme));
    store_ = std::make_unique<ChunkStoreImpl>(options_, *std::move(dram), *std::move(index),
                                              std::move(below));
  }

  // Puts chunks 0..kCount-1, letting the NVMe tier's demotions catch up after each.
  void PutAll() {
    for (uint64_t i = 0; i < kCount; ++i) {
      ASSERT_TRUE(PutPattern(*store_, MakeId(i), i, kChunk).ok()) << i;
      for (int n = 0; n < 1000 && store_->Stats().nvme.demotions_pending != 0; ++n) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }

  std::unique_ptr<ScratchDir> dir_;
  ChunkStoreOptions options_;
  MemoryTier* middle_ = nullptr;
  std::unique_ptr<ChunkStore> store_;
};

TEST_F(TierStackTest, EvictionsFlowDownThroughEachTier) {
  PutAll();
  // Oldest on NVMe, then the middle tier's kMiddleChunks, then DRAM.
  std::vector<Tier> where;
  for (uint64_t i = 0; i < kCount; ++i) where.push_back(store_->Locate(MakeId(i)));
  size_t i = 0;
  while (i < where.size() && where[i] == Tier::kNvme) ++i;
  const size_t on_nvme = i;
  while (i < where.size() && where[i] == Tier::kGpu) ++i;
  EXPECT_EQ(i - on_nvme, kMiddleChunks);
  while (i < where.size() && where[i] == Tier::kDram) ++i;
  EXPECT_EQ(i, where.size()) << "tiers out of order at chunk " << i;
  EXPECT_GT(on_nvme, 0u);
  EXPECT_EQ(store_->Stats().nvme.demotions, on_nvme);

  // Every chunk comes back byte-exact, from whichever tier holds it.
  for (uint64_t k = 0; k < kCount; ++k) {
    absl::StatusOr<ChunkRef> got = store_->Get(MakeId(k));
    ASSERT_TRUE(got.ok()) << k << ": " << got.status();
    EXPECT_TRUE(HasPattern(**got, k, kChunk)) << k;
  }
  const StoreStats stats = store_->Stats();
  ASSERT_EQ(stats.tiers.size(), 3u);
  EXPECT_EQ(stats.tiers[0].tier, Tier::kDram);
  EXPECT_EQ(stats.tiers[1].tier, Tier::kGpu);
  EXPECT_EQ(stats.tiers[1].chunks, kMiddleChunks);
  EXPECT_EQ(stats.tiers[2].tier, Tier::kNvme);
  EXPECT_EQ(stats.tiers[2].chunks, on_nvme);
  EXPECT_EQ(stats.nvme.hits, on_nvme);
  // Each get counted once, at the tier that served it.
  EXPECT_EQ(stats.tiers[0].hits, kCount - on_nvme - kMiddleChunks);
  EXPECT_EQ(stats.tiers[1].hits, kMiddleChunks);
  EXPECT_EQ(stats.tiers[2].hits, on_nvme);
  EXPECT_EQ(stats.total.hits, kCount);

  // The namespace's footprint lists each tier, fastest first.
  const std::vector<NamespaceUsage> usage = store_->NamespaceUsages();
  ASSERT_EQ(usage.size(), 1u);
  ASSERT_EQ(usage[0].tiers.size(), 3u);
  EXPECT_EQ(usage[0].tiers[0].tier, Tier::kDram);
  EXPECT_EQ(usage[0].tiers[1].tier, Tier::kGpu);
  EXPECT_EQ(usage[0].tiers[2].tier, Tier::kNvme);
  EXPECT_EQ(usage[0].Of(Tier::kGpu).chunks, kMiddleChunks);
  EXPECT_EQ(usage[0].Of(Tier::kGpu).bytes, kMiddleChunks * kChunk);
  EXPECT_EQ(usage[0].Of(Tier::kNvme).chunks, on_nvme);
  EXPECT_EQ(usage[0].Chunks(), kCount);
}

TEST_F(TierStackTest, LookupsReportEachChunksTier) {
  PutAll();
  std::vector<Key128> keys;
  for (uint64_t i = 0; i < kCount; ++i) keys.push_back(MakeId(i).key);
  const LookupResult r = store_->Lookup(MakeId(0).ns, keys, absl::ZeroDuration());
  ASSERT_EQ(r.hit_count, kCount);
  for (uint64_t i = 0; i < kCount; ++i) EXPECT_EQ(r.tiers[i], store_->Locate(MakeId(i))) << i;
}

// A pin reads a chunk below DRAM to promote it; that is not a get of the tier.
TEST_F(TierStackTest, PinsPromoteWithoutCountingGets) {
  PutAll();
  ASSERT_EQ(store_->Locate(MakeId(0)), Tier::kNvme);
  const Key128 key = MakeId(0).key;
  absl::StatusOr<uint32_t> pinned = store_->Pin(MakeId(0).ns, absl::MakeConstSpan(&key, 1), true);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(*pinned, 1u);
  EXPECT_EQ(store_->Locate(MakeId(0)), Tier::kDram);
  const StoreStats stats = store_->Stats();
  EXPECT_EQ(stats.nvme.hits, 0u);
  EXPECT_EQ(stats.nvme.misses, 0u);
  EXPECT_EQ(stats.nvme.promotions, 1u);
}

// A hit is promoted into DRAM unless the tier says its bytes are already in memory.
TEST_F(TierStackTest, PromotesOnlyPromotableReads) {
  for (const bool promotable : {true, false}) {
    Build(/*promote_on_hit=*/true, promotable);
    PutAll();
    uint64_t in_middle = 0;
    while (store_->Locate(MakeId(in_middle)) != Tier::kGpu) ++in_middle;
    absl::StatusOr<ChunkRef> got = store_->Get(MakeId(in_middle));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(HasPattern(**got, in_middle, kChunk));
    EXPECT_EQ(store_->Locate(MakeId(in_middle)), promotable ? Tier::kDram : Tier::kGpu)
        << promotable;
    EXPECT_EQ(store_->Stats().nvme.promotions, promotable ? 1u : 0u);
  }
}

TEST_F(TierStackTest, DeletesAndClearsReachEveryTier) {
  PutAll();
  uint64_t in_middle = 0;
  while (store_->Locate(MakeId(in_middle)) != Tier::kGpu) ++in_middle;
  ASSERT_TRUE(store_->Delete(MakeId(in_middle)).ok());
  EXPECT_EQ(store_->Locate(MakeId(in_middle)), Tier::kNone);
  ASSERT_TRUE(store_->Delete(MakeId(0)).ok());  // on NVMe
  EXPECT_TRUE(absl::IsNotFound(store_->Get(MakeId(0)).status()));
  // Each remaining chunk counted once, wherever it was.
  EXPECT_EQ(store_->ClearNamespace(MakeId(0).ns), kCount - 2);
  for (uint64_t i = 0; i < kCount; ++i) EXPECT_EQ(store_->Locate(MakeId(i)), Tier::kNone) << i;
}

}  // namespace
}  // namespace kvstash::storage
