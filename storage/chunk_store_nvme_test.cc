// ChunkStore with the NVMe tier: demotion, promotion, write-through, restart, drops.
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "storage/chunk_store.h"
#include "storage/nvme/demoter.h"
#include "storage/nvme/nvme_test_util.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::HasPattern;
using testing::MakeId;
using testing::Pattern;
using testing::PutInPlace;
using testing::PutPattern;
using testing::ScratchDir;

constexpr uint64_t kPage = 64 << 10;
constexpr uint64_t kChunk = 60 << 10;  // one DRAM page each
constexpr uint64_t kDramPages = 16;

ChunkStoreOptions NvmeOptions(const std::string& path) {
  ChunkStoreOptions o;
  o.page_bytes = kPage;
  o.dram_capacity_bytes = kDramPages * kPage;
  o.huge_pages = ChunkStoreOptions::HugePages::kOff;
  o.index_shards = 4;
  o.nvme.path = path;
  o.nvme.capacity_bytes = 64 << 20;
  o.nvme.demotion_queue_chunks = 64;
  return o;
}

// Only evictions are written to NVMe (no cleaner), and NVMe hits stay there (no promotion):
// what is where follows from the put order alone.
ChunkStoreOptions EvictionsOnlyOptions(const std::string& path) {
  ChunkStoreOptions o = NvmeOptions(path);
  o.nvme.promote_on_hit = false;
  o.nvme.clean_window_percent = 0;
  return o;
}

std::unique_ptr<ChunkStore> MakeStore(const ChunkStoreOptions& o) {
  auto store = ChunkStore::Create(o);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

const TierStats& NvmeTier(const StoreStats& s) { return s.tiers.at(1); }

// Waits until no demotion is queued or in flight (10 s at most).
bool WaitForDemotions(const ChunkStore& store) {
  for (int i = 0; i < 1000; ++i) {
    if (store.Stats().nvme.demotions_pending == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// Waits until the cleaner wrote at least `n` chunks and nothing is pending (10 s at most).
bool WaitForCleanings(const ChunkStore& store, uint64_t n) {
  for (int i = 0; i < 1000; ++i) {
    const StoreStats s = store.Stats();
    if (s.nvme.cleanings >= n && s.nvme.demotions_pending == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Puts chunks 0..count-1, letting demotion catch up after each put.
void PutPaced(ChunkStore& store, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    ASSERT_TRUE(PutPattern(store, MakeId(i), i, kChunk).ok());
    ASSERT_TRUE(WaitForDemotions(store)) << i;
  }
}

// Served chunks are byte-exact; returns how many were served.
uint64_t CheckAll(ChunkStore& store, uint64_t count) {
  uint64_t served = 0;
  for (uint64_t i = 0; i < count; ++i) {
    absl::StatusOr<ChunkRef> got = store.Get(MakeId(i));
    if (!got.ok()) continue;
    EXPECT_TRUE(HasPattern(**got, i, kChunk)) << i;
    ++served;
  }
  return served;
}

// The first chunk that Locate places on NVMe, or `count`.
uint64_t FirstOnNvme(const ChunkStore& store, uint64_t count) {
  for (uint64_t i = 0; i < count; ++i) {
    if (store.Locate(MakeId(i)) == Tier::kNvme) return i;
  }
  return count;
}

// Puts 40 chunks (more than DRAM holds) paced for demotion; returns the first on NVMe.
uint64_t PutPastDram(ChunkStore& store) {
  PutPaced(store, 40);
  return FirstOnNvme(store, 40);
}

bool ReadsBack(ChunkStore& store, uint64_t n) {
  absl::StatusOr<ChunkRef> got = store.Get(MakeId(n));
  return got.ok() && HasPattern(**got, n, kChunk);
}

TEST(ChunkStoreNvmeTest, OffByDefault) {
  EXPECT_TRUE(ChunkStoreOptions{}.nvme.path.empty());
  ChunkStoreOptions o = NvmeOptions("");
  auto store = MakeStore(o);
  EXPECT_EQ(store->Stats().tiers.size(), 1u);
}

TEST(ChunkStoreNvmeTest, OptionErrorsNameTheField) {
  ChunkStoreOptions o = NvmeOptions("/tmp/unused");
  o.nvme.capacity_bytes = 10;
  EXPECT_NE(o.Validate().message().find("nvme.capacity_bytes"), absl::string_view::npos);
  o = NvmeOptions("/tmp/unused");
  o.nvme.demotion_threads = 0;
  EXPECT_NE(o.Validate().message().find("nvme.demotion_threads"), absl::string_view::npos);
  o = NvmeOptions("/tmp/unused");
  o.nvme.demotion_queue_chunks = 0;
  EXPECT_NE(o.Validate().message().find("nvme.demotion_queue_chunks"), absl::string_view::npos);
  o = NvmeOptions("/tmp/unused");
  o.nvme.clean_window_percent = 101;
  EXPECT_NE(o.Validate().message().find("nvme.clean_window_percent"), absl::string_view::npos);
  o = NvmeOptions("/tmp/unused");
  o.nvme.demotion_wait_ms = -1;
  EXPECT_NE(o.Validate().message().find("nvme.demotion_wait_ms"), absl::string_view::npos);
  o = NvmeOptions("/tmp/unused");
  o.nvme.flush_interval_ms = -1;
  EXPECT_NE(o.Validate().message().find("nvme.flush_interval_ms"), absl::string_view::npos);
  o = NvmeOptions("/tmp/unused");
  o.nvme.read_threads = 0;
  EXPECT_NE(o.Validate().message().find("nvme.read_threads"), absl::string_view::npos);
  o = NvmeOptions("/tmp/unused");
  o.nvme.eviction = "mru";
  EXPECT_NE(o.Validate().message().find("nvme.eviction"), absl::string_view::npos);
  o = NvmeOptions("/tmp/unused");
  o.nvme.admission_min_hits = -1;
  EXPECT_NE(o.Validate().message().find("nvme.admission_min_hits"), absl::string_view::npos);
}

TEST(NvmeAdmissionTest, KeptChunksAreAlwaysAdmitted) {
  EXPECT_TRUE(NvmeAdmission{}.Admits(0, false));  // default: every chunk
  const NvmeAdmission two{2};
  EXPECT_FALSE(two.Admits(1, false));
  EXPECT_TRUE(two.Admits(2, false));
  EXPECT_TRUE(two.Admits(0, /*keep=*/true));
}

// Chunks 0..9 fit in DRAM; 0, 2 and 4 are read twice, 6 once; 30 more puts evict them all.
TEST(ChunkStoreNvmeTest, AdmissionWritesOnlyChunksReadEnough) {
  ScratchDir dir;
  ChunkStoreOptions o = EvictionsOnlyOptions(dir.path());
  o.nvme.admission_min_hits = 2;
  auto store = MakeStore(o);
  PutPaced(*store, 10);
  ASSERT_EQ(store->Stats().total.evictions, 0u);
  for (uint64_t i : {0, 2, 4, 0, 2, 4, 6}) ASSERT_TRUE(store->Get(MakeId(i)).ok());
  for (uint64_t i = 10; i < 40; ++i) {
    ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kChunk).ok());
    ASSERT_TRUE(WaitForDemotions(*store)) << i;
  }
  for (uint64_t i = 0; i < 10; ++i) {
    const bool read_twice = i <= 4 && i % 2 == 0;
    EXPECT_EQ(store->Locate(MakeId(i)), read_twice ? Tier::kNvme : Tier::kNone) << i;
  }
  const StoreStats stats = store->Stats();
  EXPECT_EQ(stats.nvme.demotions, 3u);
  EXPECT_EQ(NvmeTier(stats).chunks, 3u);
  EXPECT_EQ(stats.nvme.admission_declined, stats.total.evictions - 3);
  EXPECT_TRUE(ReadsBack(*store, 2));
}

// A lookup and the fetch after it are one use: chunk 0, looked up and fetched once, is not
// admitted at 2 hits; chunk 2, twice, is.
TEST(ChunkStoreNvmeTest, ALookupAndItsFetchCountAsOneUse) {
  ScratchDir dir;
  ChunkStoreOptions o = EvictionsOnlyOptions(dir.path());
  o.nvme.admission_min_hits = 2;
  auto store = MakeStore(o);
  PutPaced(*store, 10);
  for (uint64_t i : {0, 2, 2}) {
    const std::vector<Key128> keys = {MakeId(i).key};
    ASSERT_EQ(store->Lookup(MakeId(i).ns, keys, absl::ZeroDuration()).hit_count, 1u);
    ASSERT_TRUE(store->Get(MakeId(i)).ok());
  }
  for (uint64_t i = 10; i < 40; ++i) {
    ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kChunk).ok());
    ASSERT_TRUE(WaitForDemotions(*store)) << i;
  }
  EXPECT_EQ(store->Locate(MakeId(0)), Tier::kNone);
  EXPECT_EQ(store->Locate(MakeId(2)), Tier::kNvme);
}

// The cleaner writes ahead only what eviction would write: chunks 0 and 1, read once and
// then the coldest, are cleaned; the unread chunks of the window are left alone.
TEST(ChunkStoreNvmeTest, CleanerFollowsTheAdmissionRule) {
  ScratchDir dir;
  ChunkStoreOptions o = NvmeOptions(dir.path());
  o.nvme.promote_on_hit = false;
  o.nvme.clean_window_percent = 50;
  o.nvme.admission_min_hits = 1;
  auto store = MakeStore(o);
  constexpr uint64_t kFill = kDramPages - 2;
  for (uint64_t i = 0; i < kFill; ++i) {
    ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kChunk).ok());
    if (i < 2) ASSERT_TRUE(store->Get(MakeId(i)).ok());
  }
  ASSERT_TRUE(WaitForCleanings(*store, 2));
  // Evict a few: the two clean chunks go first and cost no write; the rest are declined.
  for (uint64_t i = kFill; i < kFill + 7; ++i) {
    ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kChunk).ok());
  }
  ASSERT_TRUE(WaitForDemotions(*store));
  const StoreStats stats = store->Stats();
  ASSERT_GT(stats.total.evictions, 2u);
  EXPECT_EQ(stats.nvme.cleanings, 2u);
  EXPECT_EQ(stats.nvme.demotions, 0u);
  EXPECT_EQ(stats.nvme.admission_declined, stats.total.evictions - 2);
  EXPECT_EQ(store->Locate(MakeId(0)), Tier::kNvme);
  EXPECT_EQ(store->Locate(MakeId(1)), Tier::kNvme);
  EXPECT_EQ(store->Locate(MakeId(2)), Tier::kNone);
}

// What GetAsync delivered, and on which thread.
struct AsyncGot {
  absl::Notification done;
  absl::StatusOr<ChunkRef> ref = absl::UnknownError("not called");
  std::thread::id thread;
};

void StartGet(ChunkStore& store, uint64_t i, AsyncGot* got) {
  store.GetAsync(MakeId(i), /*lease_id=*/0, [got](absl::StatusOr<ChunkRef> ref) {
    got->ref = std::move(ref);
    got->thread = std::this_thread::get_id();
    got->done.Notify();
  });
}

TEST(ChunkStoreNvmeTest, GetAsyncReadsNvmeOnReadThreadsAndAnswersTheRestInline) {
  ScratchDir dir;
  auto store = MakeStore(EvictionsOnlyOptions(dir.path()));
  const uint64_t first = PutPastDram(*store);
  ASSERT_LT(first, 39u);
  const uint64_t hits_before = store->Stats().nvme.hits;
  const uint64_t misses_before = store->Stats().nvme.misses;

  AsyncGot dram, missing;
  StartGet(*store, 39, &dram);  // the newest chunk is in DRAM
  ASSERT_TRUE(dram.done.HasBeenNotified());
  EXPECT_EQ(dram.thread, std::this_thread::get_id());
  ASSERT_TRUE(dram.ref.ok()) << dram.ref.status();
  EXPECT_TRUE(HasPattern(**dram.ref, 39, kChunk));
  StartGet(*store, 1000, &missing);
  ASSERT_TRUE(missing.done.HasBeenNotified());
  EXPECT_TRUE(absl::IsNotFound(missing.ref.status())) << missing.ref.status();
  EXPECT_EQ(store->Stats().nvme.misses, misses_before + 1);  // as Get counts it

  // NVMe chunks, several at once: each arrives on a read thread, byte-exact.
  std::vector<std::unique_ptr<AsyncGot>> nvme;
  for (uint64_t i = first; i < first + 8 && store->Locate(MakeId(i)) == Tier::kNvme; ++i) {
    nvme.push_back(std::make_unique<AsyncGot>());
    StartGet(*store, i, nvme.back().get());
  }
  ASSERT_FALSE(nvme.empty());
  for (size_t k = 0; k < nvme.size(); ++k) {
    ASSERT_TRUE(nvme[k]->done.WaitForNotificationWithTimeout(absl::Seconds(10))) << k;
    EXPECT_NE(nvme[k]->thread, std::this_thread::get_id());
    ASSERT_TRUE(nvme[k]->ref.ok()) << nvme[k]->ref.status();
    EXPECT_TRUE(HasPattern(**nvme[k]->ref, first + k, kChunk)) << k;
  }
  EXPECT_EQ(store->Stats().nvme.hits, hits_before + nvme.size());
}

TEST(ChunkStoreNvmeTest, DestroyingTheStoreAnswersEveryQueuedRead) {
  ScratchDir dir;
  auto store = MakeStore(EvictionsOnlyOptions(dir.path()));
  const uint64_t first = PutPastDram(*store);
  ASSERT_LT(first, 39u);
  std::vector<std::unique_ptr<AsyncGot>> gets;
  for (int round = 0; round < 20; ++round) {
    for (uint64_t i = first; i < 39 && store->Locate(MakeId(i)) == Tier::kNvme; ++i) {
      gets.push_back(std::make_unique<AsyncGot>());
      StartGet(*store, i, gets.back().get());
    }
  }
  store.reset();  // with most of those reads still queued
  for (const auto& got : gets) {
    ASSERT_TRUE(got->done.HasBeenNotified());
    if (got->ref.ok()) continue;  // read before the store closed
    EXPECT_TRUE(absl::IsUnavailable(got->ref.status())) << got->ref.status();
  }
}

TEST(ChunkStoreNvmeTest, GetAsyncWithoutNvmeAnswersInline) {
  auto store = MakeStore(NvmeOptions(""));
  ASSERT_TRUE(PutPattern(*store, MakeId(1), 1, kChunk).ok());
  AsyncGot hit, miss;
  StartGet(*store, 1, &hit);
  StartGet(*store, 2, &miss);
  ASSERT_TRUE(hit.done.HasBeenNotified() && miss.done.HasBeenNotified());
  ASSERT_TRUE(hit.ref.ok());
  EXPECT_TRUE(HasPattern(**hit.ref, 1, kChunk));
  EXPECT_TRUE(absl::IsNotFound(miss.ref.status()));
}

TEST(ChunkStoreNvmeTest, DemotesUnderPressureAndReadsBackByteExact) {
  ScratchDir dir;
  auto store = MakeStore(EvictionsOnlyOptions(dir.path()));
  constexpr uint64_t kCount = 64;
  PutPaced(*store, kCount);
  const StoreStats stats = store->Stats();
  EXPECT_GE(stats.nvme.demotions, (kCount - kDramPages) / 2);
  EXPECT_EQ(stats.nvme.cleanings, 0u);
  EXPECT_EQ(NvmeTier(stats).chunks, stats.nvme.demotions);
  const uint64_t first = FirstOnNvme(*store, kCount);
  ASSERT_LT(first, kCount);
  std::vector<Key128> keys;
  for (uint64_t i = first; i < kCount; ++i) keys.push_back(MakeId(i).key);
  const LookupResult lookup = store->Lookup(MakeId(0).ns, keys, absl::ZeroDuration());
  ASSERT_GE(lookup.hit_count, 1u);
  EXPECT_EQ(lookup.tiers.front(), Tier::kNvme);
  EXPECT_EQ(CheckAll(*store, kCount), stats.tiers.at(0).chunks + NvmeTier(stats).chunks);
  EXPECT_EQ(store->Locate(MakeId(first)), Tier::kNvme);  // promotion off
  EXPECT_GE(store->Stats().nvme.hits, NvmeTier(stats).chunks);
}

TEST(ChunkStoreNvmeTest, NvmeHitIsPromotedIntoDram) {
  ScratchDir dir;
  auto store = MakeStore(NvmeOptions(dir.path()));
  const uint64_t first = PutPastDram(*store);
  ASSERT_LT(first, 40u);
  EXPECT_TRUE(ReadsBack(*store, first));
  EXPECT_EQ(store->Locate(MakeId(first)), Tier::kDram);
  EXPECT_EQ(store->Stats().nvme.promotions, 1u);
  EXPECT_TRUE(ReadsBack(*store, first));  // now a DRAM hit
  EXPECT_EQ(store->Stats().nvme.promotions, 1u);
}

TEST(ChunkStoreNvmeTest, FullQueueDropsAndCountsWithoutBlocking) {
  ScratchDir dir;
  ChunkStoreOptions o = NvmeOptions(dir.path());
  o.nvme.demotion_queue_chunks = 1;
  o.nvme.demotion_wait_ms = 0;      // no back-pressure: a full queue drops at once
  o.nvme.clean_window_percent = 0;  // and no cleaner writing ahead
  auto store = MakeStore(o);
  for (uint64_t i = 0; i < 200; ++i) ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kChunk).ok());
  const StoreStats stats = store->Stats();
  EXPECT_GT(stats.nvme.demotion_drops, 0u);
  // A dropped chunk is a miss, never wrong bytes.
  for (uint64_t i = 0; i < 200; ++i) {
    absl::StatusOr<ChunkRef> got = store->Get(MakeId(i));
    if (got.ok()) {
      EXPECT_TRUE(HasPattern(**got, i, kChunk)) << i;
    }
  }
}

TEST(ChunkStoreNvmeTest, CleanerWritesColdChunksBeforeEviction) {
  ScratchDir dir;
  ChunkStoreOptions o = NvmeOptions(dir.path());
  o.nvme.promote_on_hit = false;
  o.nvme.clean_window_percent = 50;
  auto store = MakeStore(o);
  // Fill DRAM without evicting (a page stays free for the index's bookkeeping), then let
  // the cleaner write the cold half: chunks 0..7, and 8, which straddles the window edge.
  constexpr uint64_t kFill = kDramPages - 2;
  for (uint64_t i = 0; i < kFill; ++i) ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kChunk).ok());
  ASSERT_TRUE(WaitForCleanings(*store, kDramPages / 2));
  StoreStats stats = store->Stats();
  ASSERT_EQ(stats.total.evictions, 0u);
  EXPECT_EQ(stats.nvme.demotions, 0u);
  EXPECT_EQ(NvmeTier(stats).chunks, stats.nvme.cleanings);
  EXPECT_EQ(store->Locate(MakeId(0)), Tier::kDram);  // cleaned, still in DRAM
  // Puts that evict fewer chunks than were cleaned: every victim is clean, so none needs
  // a demotion write, and each is then served from NVMe.
  for (uint64_t i = kFill; i < kFill + kDramPages / 2; ++i) {
    ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kChunk).ok());
  }
  ASSERT_TRUE(WaitForDemotions(*store));
  stats = store->Stats();
  const uint64_t evicted = stats.total.evictions;
  ASSERT_GT(evicted, 0u);
  ASSERT_LT(evicted, kDramPages / 2);
  EXPECT_EQ(stats.nvme.demotions, 0u) << "an evicted chunk had not been cleaned";
  EXPECT_EQ(stats.nvme.demotion_drops, 0u);
  for (uint64_t i = 0; i < evicted; ++i) {
    EXPECT_EQ(store->Locate(MakeId(i)), Tier::kNvme) << i;
    EXPECT_TRUE(ReadsBack(*store, i)) << i;  // from NVMe, byte-exact
  }
  EXPECT_GE(store->Stats().nvme.hits, evicted);
}

TEST(ChunkStoreNvmeTest, SustainedPutStreamDropsNothing) {
  ScratchDir dir;
  ChunkStoreOptions o = NvmeOptions(dir.path());
  o.nvme.promote_on_hit = false;
  o.nvme.demotion_queue_chunks = 2;  // a short queue: puts outrun it at once
  o.nvme.demotion_wait_ms = 600000;  // back-pressure never gives up here
  o.nvme.flush_interval_ms = 1;      // many small flushes slow the writer further
  auto store = MakeStore(o);
  constexpr uint64_t kCount = 400;  // 24 MiB through a 1 MiB DRAM tier, no pauses
  std::vector<std::thread> putters;
  for (uint64_t t = 0; t < 2; ++t) {
    putters.emplace_back([&, t] {
      for (uint64_t i = t; i < kCount; i += 2) {
        EXPECT_TRUE(PutPattern(*store, MakeId(i), i, kChunk).ok()) << i;
      }
    });
  }
  for (std::thread& p : putters) p.join();
  ASSERT_TRUE(WaitForDemotions(*store));
  const StoreStats stats = store->Stats();
  EXPECT_EQ(stats.nvme.demotion_drops, 0u);
  EXPECT_EQ(stats.nvme.demotion_failures, 0u);
  EXPECT_EQ(CheckAll(*store, kCount), kCount);  // every chunk, byte-exact
}

TEST(ChunkStoreNvmeTest, WriteThroughSurvivesRestart) {
  ScratchDir dir;
  ChunkStoreOptions o = NvmeOptions(dir.path());
  o.nvme.write_through = true;
  {
    auto store = MakeStore(o);
    for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(PutPattern(*store, MakeId(i), i, kChunk).ok());
    const StoreStats stats = store->Stats();
    EXPECT_EQ(stats.nvme.write_throughs, 8u);
    EXPECT_EQ(NvmeTier(stats).chunks, 8u);  // on NVMe as soon as the put returned
    EXPECT_EQ(store->Locate(MakeId(3)), Tier::kDram);
  }
  auto store = MakeStore(o);
  EXPECT_EQ(store->Stats().nvme.recovered_chunks, 8u);
  EXPECT_EQ(store->Locate(MakeId(3)), Tier::kNvme);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(ReadsBack(*store, i)) << i;
}

TEST(ChunkStoreNvmeTest, RestartServesDemotedChunks) {
  ScratchDir dir;
  constexpr uint64_t kCount = 48;
  {
    auto store = MakeStore(NvmeOptions(dir.path()));
    PutPaced(*store, kCount);
    ASSERT_TRUE(store->Delete(MakeId(0)).ok());  // demoted, then deleted: stays deleted
  }  // queued demotions are written out before the store closes
  auto store = MakeStore(NvmeOptions(dir.path()));
  EXPECT_EQ(store->Locate(MakeId(0)), Tier::kNone);
  // Chunks still in DRAM at shutdown are not written back (or were dropped): misses.
  const uint64_t recovered = store->Stats().nvme.recovered_chunks;
  EXPECT_GE(recovered, (kCount - kDramPages) / 2);
  EXPECT_EQ(CheckAll(*store, kCount), recovered);
}

TEST(ChunkStoreNvmeTest, DeleteRemovesFromEveryTier) {
  ScratchDir dir;
  ChunkStoreOptions o = NvmeOptions(dir.path());
  o.nvme.write_through = true;
  auto store = MakeStore(o);
  ASSERT_TRUE(PutPattern(*store, MakeId(1), 1, kChunk).ok());
  ASSERT_TRUE(store->Delete(MakeId(1)).ok());
  EXPECT_EQ(store->Locate(MakeId(1)), Tier::kNone);
  EXPECT_EQ(store->Get(MakeId(1)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Delete(MakeId(1)).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(NvmeTier(store->Stats()).chunks, 0u);
}

TEST(ChunkStoreNvmeTest, UnusablePathFailsCreate) {
  ScratchDir dir;
  std::ofstream(dir.Sub("file")) << "x";
  EXPECT_FALSE(ChunkStore::Create(NvmeOptions(dir.Sub("file"))).ok());
}

// Chunks received in place without a checksum are committed with a deferred one; what
// demotion writes to NVMe must still be the payload's real checksum (verified on read).
TEST(ChunkStoreNvmeTest, DeferredChecksumsReachNvmeIntact) {
  ScratchDir dir;
  auto store = MakeStore(EvictionsOnlyOptions(dir.path()));
  constexpr uint64_t kCount = 3 * kDramPages;
  for (uint64_t i = 0; i < kCount; ++i) {
    ASSERT_TRUE(PutInPlace(*store, MakeId(i), Pattern(i, kChunk)).ok()) << i;
    ASSERT_TRUE(WaitForDemotions(*store)) << i;
  }
  const StoreStats stats = store->Stats();
  EXPECT_GE(NvmeTier(stats).chunks, (kCount - kDramPages) / 2);
  // Every chunk on NVMe passes verification against the checksum demotion stored.
  EXPECT_EQ(CheckAll(*store, kCount), stats.tiers.at(0).chunks + NvmeTier(stats).chunks);
  EXPECT_EQ(store->Stats().nvme.checksum_failures, 0u);
}

// Nice values of this process's threads named `name` (none: empty).
std::vector<int> NiceOfThreads(const std::string& name) {
  std::vector<int> out;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string thread_name;
    if (!std::getline(comm, thread_name) || thread_name != name) continue;
    out.push_back(getpriority(PRIO_PROCESS, std::stoi(task.path().filename().string())));
  }
  return out;
}

TEST(ChunkStoreNvmeTest, BackgroundThreadsRunAtNice19UnlessTurnedOff) {
  // Off first: RocksDB's thread pools are process-wide and stay lowered once lowered.
  for (const bool low : {false, true}) {
    ScratchDir dir;
    ChunkStoreOptions o = NvmeOptions(dir.path());
    o.nvme.low_priority_background = low;
    auto store = MakeStore(o);
    ASSERT_NE(store, nullptr);
    ASSERT_NO_FATAL_FAILURE(PutPaced(*store, kDramPages + 8));  // the demoter has run
    const int want = low ? 19 : 0;
    for (const char* name : {"kvstash-demote", "kvstash-clean", "kvstash-nvme"}) {
      const std::vector<int> nice = NiceOfThreads(name);
      EXPECT_FALSE(nice.empty()) << "no thread named " << name;
      for (int n : nice) EXPECT_EQ(n, want) << name << ", low_priority_background=" << low;
    }
    if (!low) continue;
    // A pool thread takes the new priority with its next job: the timed flush of the
    // write-back demotions (flush_interval_ms) is one.
    bool flushed_low = false;
    for (int i = 0; i < 500 && !flushed_low; ++i) {
      for (int n : NiceOfThreads("rocksdb:high")) flushed_low |= n == 19;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(flushed_low) << "no RocksDB flush thread at nice 19";
  }
}

}  // namespace
}  // namespace kvstash::storage
