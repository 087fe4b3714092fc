#include "storage/chunk_store.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "storage/dram/dram_chunk.h"
#include "storage/index.h"
#include "storage/policy/policies.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::Checksum;
using testing::HasPattern;
using testing::MakeId;
using testing::Pattern;
using testing::PutBytes;
using testing::PutInPlace;
using testing::PutPattern;

constexpr uint64_t kPage = 64 << 10;

ChunkStoreOptions SmallOptions(uint32_t pages, int shards = 4) {
  ChunkStoreOptions o;
  o.page_bytes = kPage;
  o.dram_capacity_bytes = pages * kPage;
  o.huge_pages = ChunkStoreOptions::HugePages::kOff;
  o.index_shards = shards;
  return o;
}

std::unique_ptr<ChunkStore> MakeStore(const ChunkStoreOptions& o) {
  auto store = ChunkStore::Create(o);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

TierStats Dram(const ChunkStore& store) { return store.Stats().tiers.at(0); }

ChunkMeta Meta(uint64_t size, uint64_t checksum = 0) {
  ChunkMeta m;
  m.size_bytes = size;
  m.checksum = checksum;
  return m;
}

void ExpectInvalid(ChunkStoreOptions o, absl::string_view field) {
  absl::Status s = o.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << field;
  EXPECT_NE(s.message().find(field), absl::string_view::npos) << s;
  EXPECT_FALSE(ChunkStore::Create(o).ok());
}

TEST(ChunkStoreOptionsTest, DefaultsAreValid) { EXPECT_TRUE(ChunkStoreOptions{}.Validate().ok()); }

TEST(ChunkStoreOptionsTest, ErrorsNameTheField) {
  ChunkStoreOptions o = SmallOptions(4);
  o.page_bytes = 3000;
  ExpectInvalid(o, "page_bytes");
  o = SmallOptions(4);
  o.dram_capacity_bytes = kPage - 1;
  ExpectInvalid(o, "dram_capacity_bytes must be >= page_bytes");
  o = SmallOptions(4);
  o.max_chunk_bytes = 0;
  ExpectInvalid(o, "max_chunk_bytes");
  o = SmallOptions(4);
  o.index_shards = 6;
  ExpectInvalid(o, "index_shards");
  o = SmallOptions(4);
  o.max_lease = absl::Seconds(-1);
  ExpectInvalid(o, "max_lease");
  o = SmallOptions(4);
  o.dram_eviction = "mru";
  ExpectInvalid(o, "dram_eviction");
}

TEST(ChunkStoreTest, PutGetIsByteExactOverManySizes) {
  auto store = MakeStore(SmallOptions(128));
  const std::vector<uint64_t> sizes = {1,
                                       2,
                                       100,
                                       1023,
                                       1024,
                                       1025,
                                       5000,
                                       kPage / 2,
                                       kPage / 2 + 3,
                                       kPage - 1,
                                       kPage,
                                       kPage + 1,
                                       2 * kPage + 4097,
                                       9 * kPage,
                                       13 * kPage + kPage / 2 + 1};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::vector<uint8_t> data = Pattern(i, sizes[i]);
    // Odd append pieces cross segment boundaries at arbitrary offsets.
    ASSERT_TRUE(PutBytes(*store, MakeId(i), data, 0, 7919).ok()) << sizes[i];
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto chunk = store->Get(MakeId(i));
    ASSERT_TRUE(chunk.ok()) << chunk.status();
    const std::vector<uint8_t> data = Pattern(i, sizes[i]);
    EXPECT_TRUE(HasPattern(**chunk, i, sizes[i])) << sizes[i];
    EXPECT_EQ((*chunk)->meta().checksum, Checksum(data));
    EXPECT_EQ((*chunk)->meta().tokens, 16u);
    EXPECT_EQ((*chunk)->meta().format, 7u);
    std::vector<uint8_t> copy(sizes[i]);
    (*chunk)->CopyTo(copy.data());
    EXPECT_EQ(copy, data);
    // Whole pages first, each one page-sized segment, so a page goes out as one frame.
    const auto segs = (*chunk)->segments();
    for (uint64_t p = 0; p < sizes[i] / kPage; ++p) EXPECT_EQ(segs[p].size, kPage);
  }
  EXPECT_EQ(Dram(*store).chunks, sizes.size());
  EXPECT_LE(Dram(*store).used_bytes, Dram(*store).capacity_bytes);
}

TEST(ChunkStoreTest, InPlaceWritesThroughSegmentsAndMarkWritten) {
  auto store = MakeStore(SmallOptions(16));
  const uint64_t size = 3 * kPage + 1234;
  const std::vector<uint8_t> data = Pattern(5, size);
  auto pending = store->BeginPut(MakeId(1), Meta(size, Checksum(data)));
  ASSERT_TRUE(pending.ok());
  uint64_t offset = 0;
  for (const MutableSegment& s : (*pending)->segments()) {
    std::memcpy(s.data, data.data() + offset, s.size);
    offset += s.size;
  }
  ASSERT_EQ(offset, size);
  (*pending)->MarkWritten(size);
  EXPECT_EQ((*pending)->bytes_written(), size);
  ASSERT_TRUE(store->CommitPut(*std::move(pending)).ok());
  auto chunk = store->Get(MakeId(1));
  ASSERT_TRUE(chunk.ok());
  EXPECT_TRUE(HasPattern(**chunk, 5, size));
}

TEST(ChunkStoreTest, InPlacePutWithoutChecksumGetsTheRealOneLater) {
  for (bool background : {true, false}) {
    ChunkStoreOptions o = SmallOptions(64);
    o.background_checksums = background;
    auto store = MakeStore(o);
    for (int i = 0; i < 20; ++i) {
      const std::vector<uint8_t> data = Pattern(i, 2 * kPage + 17 * i);
      ASSERT_TRUE(PutInPlace(*store, MakeId(i), data, 0).ok());
    }
    for (int i = 0; i < 20; ++i) {
      auto chunk = store->Get(MakeId(i));
      ASSERT_TRUE(chunk.ok());
      const std::vector<uint8_t> data = Pattern(i, 2 * kPage + 17 * i);
      // Whether the background thread or this call computed it, it is the payload's.
      EXPECT_EQ((*chunk)->checksum(), Checksum(data)) << i << " background " << background;
      if (!background) {
        EXPECT_EQ((*chunk)->meta().checksum, Checksum(data));
      }
    }
  }
}

TEST(ChunkStoreTest, HashingInPiecesGivesTheWholePayloadsHash) {
  const std::vector<uint8_t> a = Pattern(1, 5000), b = Pattern(2, 1), c = Pattern(3, 70000);
  std::vector<uint8_t> all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  const std::vector<Segment> segments = {
      {a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  for (size_t piece : {size_t{0}, size_t{1}, size_t{1000}, size_t{4096}, size_t{1} << 20}) {
    EXPECT_EQ(HashSegments(segments, piece), Checksum(all)) << "piece " << piece;
  }
}

TEST(ChunkStoreTest, InPlacePutWithAWrongChecksumIsStillRejected) {
  auto store = MakeStore(SmallOptions(16));
  const std::vector<uint8_t> data = Pattern(9, 3 * kPage);
  absl::Status s = PutInPlace(*store, MakeId(1), data, Checksum(data) + 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(store->Locate(MakeId(1)), Tier::kNone);
  EXPECT_EQ(Dram(*store).used_bytes, 0u);
  ASSERT_TRUE(PutInPlace(*store, MakeId(1), data, Checksum(data)).ok());
  EXPECT_EQ((*store->Get(MakeId(1)))->meta().checksum, Checksum(data));
}

TEST(ChunkStoreTest, PutOfExistingKeyIsAlreadyExists) {
  auto store = MakeStore(SmallOptions(8));
  ASSERT_TRUE(PutPattern(*store, MakeId(1), 1, 5000).ok());
  auto again = store->BeginPut(MakeId(1), Meta(5000));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store->NamespaceCounters(MakeId(1).ns).puts, 1u);
}

TEST(ChunkStoreTest, ConcurrentPutsOfOneKeyFirstCommitWins) {
  auto store = MakeStore(SmallOptions(8));
  auto first = store->BeginPut(MakeId(1), Meta(3000));
  auto second = store->BeginPut(MakeId(1), Meta(3000));
  ASSERT_TRUE(first.ok() && second.ok());
  const auto a = Pattern(1, 3000), b = Pattern(2, 3000);
  ASSERT_TRUE((*second)->Append(b.data(), b.size()).ok());
  ASSERT_TRUE((*first)->Append(a.data(), a.size()).ok());
  ASSERT_TRUE(store->CommitPut(*std::move(second)).ok());
  ASSERT_TRUE(store->CommitPut(*std::move(first)).ok());  // discarded
  auto chunk = store->Get(MakeId(1));
  ASSERT_TRUE(chunk.ok());
  EXPECT_TRUE(HasPattern(**chunk, 2, 3000));
  EXPECT_EQ(store->NamespaceCounters(MakeId(1).ns).puts, 1u);
  chunk->reset();
  ASSERT_TRUE(store->Delete(MakeId(1)).ok());
  EXPECT_EQ(Dram(*store).used_bytes, 0u);  // the loser's space was freed too
}

TEST(ChunkStoreTest, AbortedPutLeavesNoTrace) {
  auto store = MakeStore(SmallOptions(8));
  {
    auto pending = store->BeginPut(MakeId(1), Meta(2 * kPage + 10));
    ASSERT_TRUE(pending.ok());
    const auto half = Pattern(1, kPage);
    ASSERT_TRUE((*pending)->Append(half.data(), half.size()).ok());
    EXPECT_GT(Dram(*store).used_bytes, 0u);
    EXPECT_EQ(store->Locate(MakeId(1)), Tier::kNone);  // not visible before commit
  }
  EXPECT_EQ(store->Locate(MakeId(1)), Tier::kNone);
  EXPECT_EQ(Dram(*store).used_bytes, 0u);
  EXPECT_EQ(Dram(*store).chunks, 0u);
  EXPECT_EQ(store->NamespaceCounters(MakeId(1).ns).puts, 0u);
}

TEST(ChunkStoreTest, ChecksumMismatchIsDataLossAndStoresNothing) {
  auto store = MakeStore(SmallOptions(8));
  const auto data = Pattern(3, 10000);
  absl::Status s = PutBytes(*store, MakeId(1), data, Checksum(data) ^ 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(store->Locate(MakeId(1)), Tier::kNone);
  EXPECT_EQ(Dram(*store).used_bytes, 0u);
  EXPECT_TRUE(PutBytes(*store, MakeId(1), data, Checksum(data)).ok());
}

TEST(ChunkStoreTest, RejectsBadSizesAndIncompleteCommits) {
  ChunkStoreOptions o = SmallOptions(8);
  o.max_chunk_bytes = 4 * kPage;
  auto store = MakeStore(o);
  EXPECT_EQ(store->BeginPut(MakeId(1), Meta(0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->BeginPut(MakeId(1), Meta(4 * kPage + 1)).status().code(),
            absl::StatusCode::kResourceExhausted);
  o.max_chunk_bytes = 100 * kPage;
  store = MakeStore(o);
  EXPECT_EQ(store->BeginPut(MakeId(1), Meta(9 * kPage)).status().code(),
            absl::StatusCode::kResourceExhausted);  // larger than the tier

  auto pending = store->BeginPut(MakeId(1), Meta(100));
  ASSERT_TRUE(pending.ok());
  const auto data = Pattern(1, 101);
  EXPECT_EQ((*pending)->Append(data.data(), 101).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*pending)->Append(data.data(), 60).ok());
  EXPECT_EQ(store->CommitPut(*std::move(pending)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->CommitPut(nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dram(*store).used_bytes, 0u);
}

TEST(ChunkStoreTest, EvictionKeepsUsageWithinBudgetAndRecentChunks) {
  auto store = MakeStore(SmallOptions(16, /*shards=*/1));
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kPage).ok()) << i;
    if (i >= 2) {
      ASSERT_TRUE(store->Get(MakeId(2)).ok());  // keep chunk 2 hot
    }
    ASSERT_LE(Dram(*store).used_bytes, Dram(*store).capacity_bytes);
  }
  EXPECT_EQ(Dram(*store).chunks, 16u);
  EXPECT_EQ(Dram(*store).used_bytes, 16 * kPage);
  EXPECT_EQ(store->Locate(MakeId(2)), Tier::kDram);
  for (int i = 85; i < 100; ++i) EXPECT_EQ(store->Locate(MakeId(i)), Tier::kDram) << i;
  EXPECT_EQ(store->Stats().total.evictions, 84u);
}

TEST(ChunkStoreTest, LargeChunkEvictsSmallOnesAndReusesTheirSlabPages) {
  auto store = MakeStore(SmallOptions(16));
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(PutPattern(*store, MakeId(i), i, 3000).ok());
  ASSERT_TRUE(PutPattern(*store, MakeId(1000), 1000, 15 * kPage).ok());
  auto big = store->Get(MakeId(1000));
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE(HasPattern(**big, 1000, 15 * kPage));
  EXPECT_LE(Dram(*store).used_bytes, Dram(*store).capacity_bytes);
}

TEST(ChunkStoreTest, BookkeepingOfSmallChunksCountsAgainstTheBudget) {
  auto store = MakeStore(SmallOptions(16));
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(PutPattern(*store, MakeId(i), i, 1000).ok());
  const TierStats dram = Dram(*store);
  // 16 pages hold 1024 objects of 1 KiB; ~320 bytes of heap per chunk take a quarter. The
  // charge is in whole pages, rounded down, so it may trail by up to one page.
  EXPECT_LT(dram.chunks, 900u);
  EXPECT_LE(dram.used_bytes + dram.chunks * 300, dram.capacity_bytes + kPage);
}

TEST(ChunkStoreTest, BookkeepingChargeCoversTheStructuresOfEveryChunk) {
  // At least the entry, its map slot, the DramChunk and its shared_ptr counts per chunk,
  // whatever they grow to.
  using MapSlot = std::pair<const ChunkId, std::unique_ptr<IndexEntry>>;
  const uint64_t floor =
      sizeof(IndexEntry) + sizeof(MapSlot) + sizeof(DramChunk) + 2 * sizeof(long);
  for (const std::string& policy : KnownEvictionPolicies()) {
    ChunkStoreOptions o = SmallOptions(128);
    o.dram_eviction = policy;
    auto store = MakeStore(o);
    for (int i = 0; i < 12000; ++i) ASSERT_TRUE(PutPattern(*store, MakeId(i), i, 1000).ok());
    const TierStats dram = Dram(*store);
    EXPECT_LE(dram.used_bytes + dram.chunks * floor, dram.capacity_bytes + kPage) << policy;
  }
  auto lru = ChunkIndex::Create(1, "lru");
  auto s3fifo = ChunkIndex::Create(1, "s3fifo");
  ASSERT_TRUE(lru.ok() && s3fifo.ok());
  EXPECT_GE((*lru)->BytesPerEntry(), sizeof(IndexEntry) + sizeof(MapSlot));
  EXPECT_GT((*s3fifo)->BytesPerEntry(), (*lru)->BytesPerEntry());  // its ghosts
}

TEST(ChunkStoreTest, ReaderRefOutlivesEvictionAndDelete) {
  auto store = MakeStore(SmallOptions(8));
  ASSERT_TRUE(PutPattern(*store, MakeId(1), 1, 2 * kPage + 99).ok());
  ASSERT_TRUE(PutPattern(*store, MakeId(2), 2, 2 * kPage).ok());
  auto held1 = store->Get(MakeId(1));
  auto held2 = store->Get(MakeId(2));
  ASSERT_TRUE(held1.ok() && held2.ok());
  ASSERT_TRUE(store->Delete(MakeId(1)).ok());
  EXPECT_EQ(store->Delete(MakeId(1)).code(), absl::StatusCode::kNotFound);
  // Churn the rest of the tier: held chunks are neither evicted nor overwritten.
  for (int i = 10; i < 40; ++i) {
    absl::Status s = PutPattern(*store, MakeId(i), i, kPage);
    ASSERT_TRUE(s.ok()) << s;
  }
  EXPECT_TRUE(HasPattern(**held1, 1, 2 * kPage + 99));
  EXPECT_TRUE(HasPattern(**held2, 2, 2 * kPage));
  EXPECT_EQ(store->Locate(MakeId(2)), Tier::kDram);  // referenced: skipped by eviction
  const uint64_t used = Dram(*store).used_bytes;
  held1->reset();  // the deleted chunk's memory goes with its last reader
  EXPECT_LT(Dram(*store).used_bytes, used);
}

TEST(ChunkStoreTest, EverythingReferencedIsResourceExhausted) {
  auto store = MakeStore(SmallOptions(4));
  std::vector<ChunkRef> readers;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kPage).ok());
    readers.push_back(*store->Get(MakeId(i)));
  }
  auto pending = store->BeginPut(MakeId(99), Meta(kPage));
  ASSERT_EQ(pending.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(pending.status().message().find("nothing evictable"), absl::string_view::npos);
  readers.pop_back();
  EXPECT_TRUE(store->BeginPut(MakeId(99), Meta(kPage)).ok());
}

TEST(ChunkStoreTest, StatsAndCounters) {
  auto store = MakeStore(SmallOptions(8));
  ASSERT_TRUE(PutPattern(*store, MakeId(1, 1), 1, 5000).ok());
  ASSERT_TRUE(PutPattern(*store, MakeId(2, 2), 2, kPage).ok());
  ASSERT_TRUE(store->Get(MakeId(1, 1)).ok());
  EXPECT_EQ(store->Get(MakeId(3, 1)).status().code(), absl::StatusCode::kNotFound);
  const StoreStats stats = store->Stats();
  ASSERT_EQ(stats.tiers.size(), 1u);
  EXPECT_EQ(stats.tiers[0].tier, Tier::kDram);
  EXPECT_EQ(stats.tiers[0].capacity_bytes, 8 * kPage);
  EXPECT_EQ(stats.tiers[0].chunks, 2u);
  EXPECT_EQ(stats.tiers[0].chunk_bytes, 5000 + kPage);
  EXPECT_EQ(stats.tiers[0].used_bytes, 2 * kPage);  // one whole page + one slab page
  EXPECT_EQ(stats.total.chunks, 2u);
  EXPECT_EQ(stats.total.puts, 2u);
  EXPECT_EQ(stats.total.hits, 1u);
  EXPECT_EQ(stats.total.misses, 1u);
  const CounterSnapshot ns1 = store->NamespaceCounters(MakeId(0, 1).ns);
  EXPECT_EQ(ns1.bytes, 5000u);
  EXPECT_EQ(ns1.misses, 1u);
  EXPECT_EQ(store->AllNamespaceCounters().size(), 2u);
}

}  // namespace
}  // namespace kvstash::storage
