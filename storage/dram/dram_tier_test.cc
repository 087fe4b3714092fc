// DramTier on its own: a real allocator and index, a recording tier below it.
#include "storage/dram/dram_tier.h"

#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "storage/dram/dram_chunk.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::HasPattern;
using testing::MakeId;
using testing::Pattern;

constexpr uint64_t kPage = 64 << 10;
constexpr uint64_t kPages = 8;
constexpr uint64_t kDramQuota = kPage * kPages;  // charges show in DramExcess against it
constexpr uint64_t kPinQuota = 4000;

TenantOptions Quotas() {
  TenantOptions t;
  t.dram_quota_bytes = kDramQuota;
  t.pin_quota_bytes = kPinQuota;
  return t;
}

// Records what the DRAM tier offers it.
class RecordingTier final : public LowerTier {
 public:
  void Attach(const TierEnv&) override {}
  Tier kind() const override { return Tier::kNvme; }
  bool blocking() const override { return false; }
  bool Contains(const ChunkId&) const override { return false; }
  void Admit(const EvictedEntry& evicted, ChunkRef chunk) override {
    admitted.emplace_back(evicted.id, std::move(chunk));
  }
  void Committed(const ChunkId&, const StoredChunk&) override {}
  TierRead Get(const ChunkId&, bool) override { return {}; }
  bool Delete(const ChunkId&) override { return false; }
  void Clear(const Key128&, absl::flat_hash_set<ChunkId>*) override {}
  void DramEvicting() override {}
  void AfterEvictions() override {}
  void AddUsage(absl::flat_hash_map<Key128, NamespaceUsage>*) const override {}
  void Report(StoreStats*) const override {}

  std::vector<std::pair<ChunkId, ChunkRef>> admitted;
};

class DramTierTest : public ::testing::Test {
 protected:
  DramTierTest() : quotas_(Quotas(), kPage * kPages / 2) {
    options_.page_bytes = kPage;
    options_.dram_capacity_bytes = kPage * kPages;
    options_.max_chunk_bytes = 4 * kPage;
    options_.huge_pages = ChunkStoreOptions::HugePages::kOff;
    options_.prefault_dram = false;
    options_.background_checksums = false;
    tier_ = MakeTier();
    tier_->SetBelow(&below_);
  }

  std::unique_ptr<DramTier> MakeTier() {
    auto dram = DramTier::CreateAllocator(options_);
    EXPECT_TRUE(dram.ok()) << dram.status();
    auto index = ChunkIndex::Create(4, "lru");
    EXPECT_TRUE(index.ok()) << index.status();
    return std::make_unique<DramTier>(options_, *std::move(dram), *std::move(index), &quotas_);
  }

  // Reserves, fills, seals and inserts a chunk of Pattern(seed, size).
  bool Put(const ChunkId& id, uint64_t seed, uint64_t size) {
    Allocation allocation;
    if (!tier_->TryAllocate(size, &allocation)) return false;
    ChunkMeta meta;
    meta.size_bytes = size;
    std::unique_ptr<PendingChunk> pending =
        tier_->NewPending(id, meta, std::move(allocation), PutHints{});
    const std::vector<uint8_t> data = Pattern(seed, size);
    EXPECT_TRUE(pending->Append(data.data(), data.size()).ok());
    PutHints hints;
    absl::StatusOr<ChunkRef> chunk = tier_->Seal(pending.get(), &hints);
    EXPECT_TRUE(chunk.ok()) << chunk.status();
    return chunk.ok() && tier_->Insert(id, *chunk, /*count_put=*/true, hints);
  }

  ChunkStoreOptions options_;
  TenantQuotas quotas_;
  RecordingTier below_;
  std::unique_ptr<DramTier> tier_;
};

TEST_F(DramTierTest, CheckFitsRefusesWhatCouldNeverFit) {
  EXPECT_TRUE(tier_->CheckFits(4 * kPage).ok());
  EXPECT_EQ(tier_->CheckFits(4 * kPage + 1).code(), absl::StatusCode::kResourceExhausted);
  options_.max_chunk_bytes = 64 * kPage;
  std::unique_ptr<DramTier> roomy = MakeTier();
  EXPECT_EQ(roomy->CheckFits(kPages * kPage + 1).code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(DramTierTest, APutIsHeldServedAndReported) {
  const ChunkId id = MakeId(1);
  ASSERT_TRUE(Put(id, 1, kPage + 100));
  EXPECT_TRUE(tier_->Contains(id));
  const TierRead read = tier_->Get(id, /*for_get=*/true);
  ASSERT_NE(read.chunk, nullptr);
  EXPECT_FALSE(read.promotable);
  EXPECT_TRUE(HasPattern(*read.chunk, 1, kPage + 100));
  EXPECT_EQ(tier_->index().Totals().hits, 1u);

  StoreStats stats;
  tier_->Report(&stats);
  ASSERT_EQ(stats.tiers.size(), 1u);
  EXPECT_EQ(stats.tiers[0].tier, Tier::kDram);
  EXPECT_EQ(stats.tiers[0].chunks, 1u);
  EXPECT_EQ(stats.tiers[0].chunk_bytes, kPage + 100);
  EXPECT_EQ(stats.tiers[0].capacity_bytes, kPage * kPages);

  absl::flat_hash_map<Key128, NamespaceUsage> usage;
  tier_->AddUsage(&usage);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[id.ns].Of(Tier::kDram).bytes, kPage + 100);
}

TEST_F(DramTierTest, ASecondInsertOfTheKeyIsDropped) {
  const ChunkId id = MakeId(1);
  ASSERT_TRUE(Put(id, 1, 1000));
  EXPECT_FALSE(Put(id, 2, 1000));
  EXPECT_TRUE(HasPattern(*tier_->Get(id, true).chunk, 1, 1000));
}

TEST_F(DramTierTest, SealRefusesAnotherTiersPendingChunk) {
  std::unique_ptr<DramTier> other = MakeTier();
  Allocation allocation;
  ASSERT_TRUE(other->TryAllocate(100, &allocation));
  ChunkMeta meta;
  meta.size_bytes = 100;
  std::unique_ptr<PendingChunk> pending =
      other->NewPending(MakeId(1), meta, std::move(allocation), PutHints{});
  PutHints hints;
  EXPECT_EQ(tier_->Seal(pending.get(), &hints).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DramTierTest, EvictOneOffersTheColdestToTheTierBelow) {
  ASSERT_TRUE(Put(MakeId(1), 1, 2 * kPage));
  ASSERT_TRUE(Put(MakeId(2), 2, 2 * kPage));
  ASSERT_NE(tier_->Get(MakeId(1), true).chunk, nullptr);  // 2 is now the coldest
  EXPECT_EQ(tier_->EvictOne(), 2 * kPage);
  ASSERT_EQ(below_.admitted.size(), 1u);
  EXPECT_EQ(below_.admitted[0].first, MakeId(2));
  EXPECT_TRUE(HasPattern(*below_.admitted[0].second, 2, 2 * kPage));
  EXPECT_FALSE(tier_->Contains(MakeId(2)));
  EXPECT_TRUE(tier_->Contains(MakeId(1)));
}

TEST_F(DramTierTest, EvictOneOfATenantLeavesOtherNamespaces) {
  const ChunkId mine = MakeId(1, /*ns=*/1);
  const ChunkId theirs = MakeId(2, /*ns=*/2);
  ASSERT_TRUE(Put(theirs, 2, 1000));  // colder
  ASSERT_TRUE(Put(mine, 1, 1000));
  quotas_.Bind(mine.ns, "me");
  const TenantMatcher me = quotas_.MatcherFor(mine.ns);
  EXPECT_EQ(tier_->EvictOne(&me), 1000u);
  EXPECT_FALSE(tier_->Contains(mine));
  EXPECT_TRUE(tier_->Contains(theirs));
  EXPECT_EQ(tier_->EvictOne(&me), 0u);  // none of its chunks left
}

TEST_F(DramTierTest, NothingEvictableEvictsNothing) {
  EXPECT_EQ(tier_->EvictOne(), 0u);
  const ChunkId id = MakeId(1);
  ASSERT_TRUE(Put(id, 1, 1000));
  const ChunkRef reader = tier_->Get(id, true).chunk;  // being read: not evictable
  EXPECT_EQ(tier_->EvictOne(), 0u);
  EXPECT_TRUE(below_.admitted.empty());
}

TEST_F(DramTierTest, CopyKeepsTheBytesAcrossSegmentShapes) {
  ASSERT_TRUE(Put(MakeId(1), 7, 3 * kPage + 123));
  const ChunkRef source = tier_->Get(MakeId(1), true).chunk;
  Allocation allocation;
  ASSERT_TRUE(tier_->TryAllocate(source->meta().size_bytes, &allocation));
  const ChunkRef copy = tier_->Copy(*source, std::move(allocation));
  EXPECT_TRUE(HasPattern(*copy, 7, 3 * kPage + 123));
}

TEST_F(DramTierTest, DeleteAndClearRemoveAndReport) {
  ASSERT_TRUE(Put(MakeId(1), 1, 1000));
  ASSERT_TRUE(Put(MakeId(2), 2, 1000));
  ASSERT_TRUE(Put(MakeId(3, /*ns=*/2), 3, 1000));
  EXPECT_TRUE(tier_->Delete(MakeId(1)));
  EXPECT_FALSE(tier_->Delete(MakeId(1)));
  absl::flat_hash_set<ChunkId> cleared;
  tier_->Clear(MakeId(2).ns, &cleared);
  EXPECT_EQ(cleared, absl::flat_hash_set<ChunkId>({MakeId(2)}));
  EXPECT_TRUE(tier_->Contains(MakeId(3, 2)));
  StoreStats stats;
  tier_->Report(&stats);
  EXPECT_EQ(stats.tiers[0].chunks, 1u);
}

TEST_F(DramTierTest, ChargesFollowTheChunksInAndOut) {
  const ChunkId a = MakeId(1);
  const ChunkId b = MakeId(2);
  EXPECT_EQ(quotas_.DramExcess(a.ns, kDramQuota), 0u);
  ASSERT_TRUE(Put(a, 1, 1000));
  ASSERT_TRUE(Put(b, 2, 3000));
  EXPECT_EQ(quotas_.DramExcess(a.ns, kDramQuota), 4000u);
  EXPECT_FALSE(Put(a, 1, 1000));  // a dropped repeat charges nothing
  EXPECT_EQ(quotas_.DramExcess(a.ns, kDramQuota), 4000u);

  // A pinned chunk gives its pin quota back when it goes.
  ASSERT_TRUE(quotas_.TryPin(a.ns, 1000));
  ASSERT_TRUE(tier_->index().SetPinned(a, true).changed);
  EXPECT_FALSE(quotas_.TryPin(a.ns, kPinQuota - 999));
  EXPECT_TRUE(tier_->Delete(a));
  EXPECT_EQ(quotas_.DramExcess(a.ns, kDramQuota), 3000u);
  EXPECT_TRUE(quotas_.TryPin(a.ns, kPinQuota));
  quotas_.Unpin(a.ns, kPinQuota);

  EXPECT_EQ(tier_->EvictOne(), 3000u);
  EXPECT_EQ(quotas_.DramExcess(a.ns, kDramQuota), 0u);

  ASSERT_TRUE(Put(a, 1, 1000));
  ASSERT_TRUE(quotas_.TryPin(a.ns, 1000));
  ASSERT_TRUE(tier_->index().SetPinned(a, true).changed);
  absl::flat_hash_set<ChunkId> cleared;
  tier_->Clear(a.ns, &cleared);
  EXPECT_EQ(quotas_.DramExcess(a.ns, kDramQuota), 0u);
  EXPECT_TRUE(quotas_.TryPin(a.ns, kPinQuota));
}

}  // namespace
}  // namespace kvstash::storage
