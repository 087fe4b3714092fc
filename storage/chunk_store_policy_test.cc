// The DRAM tier under each eviction policy, and parent hints reaching the chain policy.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/chunk_store.h"
#include "storage/policy/eviction_policy.h"
#include "storage/policy/policies.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::HasPattern;
using testing::MakeId;
using testing::Pattern;

constexpr uint64_t kPage = 64 << 10;
constexpr uint64_t kChunk = 60 << 10;  // one page each
constexpr uint32_t kPages = 16;

std::unique_ptr<ChunkStore> MakeStore(const std::string& policy) {
  ChunkStoreOptions o;
  o.page_bytes = kPage;
  o.dram_capacity_bytes = kPages * kPage;
  o.huge_pages = ChunkStoreOptions::HugePages::kOff;
  o.index_shards = 4;
  o.dram_eviction = policy;
  auto store = ChunkStore::Create(o);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

// Puts chunk n (pattern n), naming `parent` as the chunk before it when given.
absl::Status Put(ChunkStore& store, uint64_t n, const ChunkId* parent = nullptr) {
  ChunkMeta meta;
  meta.size_bytes = kChunk;
  PutHints hints;
  if (parent != nullptr) {
    hints.has_parent = true;
    hints.parent = parent->key;
  }
  auto pending = store.BeginPut(MakeId(n), meta, hints);
  if (!pending.ok()) return pending.status();
  const std::vector<uint8_t> data = Pattern(n, kChunk);
  if (absl::Status s = (*pending)->Append(data.data(), data.size()); !s.ok()) return s;
  return store.CommitPut(*std::move(pending));
}

TEST(ChunkStorePolicyTest, EveryPolicyEvictsAndServesExactBytes) {
  for (const std::string& policy : KnownEvictionPolicies()) {
    auto store = MakeStore(policy);
    ASSERT_NE(store, nullptr) << policy;
    for (uint64_t i = 0; i < 60; ++i) {
      ASSERT_TRUE(Put(*store, i).ok()) << policy << " " << i;
      if (i % 4 == 0) store->Get(MakeId(i / 2)).IgnoreError();
    }
    uint64_t served = 0;
    for (uint64_t i = 0; i < 60; ++i) {
      absl::StatusOr<ChunkRef> got = store->Get(MakeId(i));
      if (!got.ok()) continue;
      EXPECT_TRUE(HasPattern(**got, i, kChunk)) << policy << " " << i;
      ++served;
    }
    EXPECT_GT(store->Stats().total.evictions, 0u) << policy;
    EXPECT_EQ(served, store->Stats().tiers.at(0).chunks) << policy;
  }
}

// Puts a 4-chunk prompt (each chunk naming the one before as parent), then unrelated
// chunks until all of it was evicted; returns whether what remained of the prompt after
// each put was always a prefix of it (no tail kept without its head).
bool PromptAlwaysAPrefix(const std::string& policy) {
  auto store = MakeStore(policy);
  constexpr uint64_t kPrompt = 4;
  for (uint64_t i = 0; i < kPrompt; ++i) {
    const ChunkId parent = MakeId(i - 1);
    EXPECT_TRUE(Put(*store, i, i == 0 ? nullptr : &parent).ok());
  }
  bool prefix = true;
  uint64_t cached = kPrompt;
  for (uint64_t n = 100; cached > 0 && n < 200; ++n) {
    EXPECT_TRUE(Put(*store, n).ok());
    cached = 0;
    bool gap = false;
    for (uint64_t i = 0; i < kPrompt; ++i) {
      const bool here = store->Locate(MakeId(i)) != Tier::kNone;
      if (here && gap) prefix = false;
      gap = gap || !here;
      cached += here ? 1 : 0;
    }
  }
  EXPECT_EQ(cached, 0u) << policy;
  return prefix;
}

TEST(ChunkStorePolicyTest, ChainPolicyNeverKeepsAnOrphanedTail) {
  EXPECT_TRUE(PromptAlwaysAPrefix("chain"));
  EXPECT_FALSE(PromptAlwaysAPrefix("lru"));  // LRU drops the head first
}

}  // namespace
}  // namespace kvstash::storage
