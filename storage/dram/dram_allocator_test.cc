#include "storage/dram/dram_allocator.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::PatternByte;

constexpr uint64_t kPage = 64 << 10;

std::shared_ptr<DramAllocator> MakeAllocator(uint32_t pages) {
  auto a = DramAllocator::Create(pages * kPage, kPage, Arena::HugePages::kOff);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : nullptr;
}

uint64_t TotalSize(const Allocation& a) {
  uint64_t total = 0;
  for (const Segment& s : a.segments) total += s.size;
  return total;
}

void Fill(const Allocation& a, uint64_t seed) {
  uint64_t i = 0;
  for (const Segment& s : a.segments) {
    for (size_t j = 0; j < s.size; ++j) const_cast<uint8_t*>(s.data)[j] = PatternByte(seed, i++);
  }
}

bool Check(const Allocation& a, uint64_t seed) {
  uint64_t i = 0;
  for (const Segment& s : a.segments) {
    for (size_t j = 0; j < s.size; ++j) {
      if (s.data[j] != PatternByte(seed, i++)) return false;
    }
  }
  return true;
}

TEST(DramAllocatorTest, SizesFromOneByteToManyPagesHaveTheRightShape) {
  auto alloc = MakeAllocator(256);
  const std::vector<uint64_t> sizes = {1,
                                       63,
                                       1023,
                                       1024,
                                       1025,
                                       4097,
                                       kPage / 2,
                                       kPage / 2 + 1,
                                       kPage - 1,
                                       kPage,
                                       kPage + 1,
                                       3 * kPage + 777,
                                       10 * kPage,
                                       17 * kPage - 5,
                                       40 * kPage + kPage / 2};
  std::vector<Allocation> live(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    const uint64_t size = sizes[i];
    ASSERT_TRUE(alloc->TryAllocate(size, &live[i])) << size;
    const Allocation& a = live[i];
    EXPECT_EQ(TotalSize(a), size);
    EXPECT_EQ(a.num_pages, size / kPage);
    EXPECT_LE(a.segments.size(), a.num_pages + SizeClasses::kMaxTailPieces);
    for (size_t s = 0; s < a.segments.size(); ++s) {
      const auto addr = reinterpret_cast<uintptr_t>(a.segments[s].data);
      EXPECT_EQ(addr % (s < a.num_pages ? kPage : 64), 0u);
      EXPECT_TRUE(alloc->arena().contains(a.segments[s].data));
    }
    EXPECT_LE(alloc->FootprintBytes(size), size + size % kPage / 4 + SizeClasses::kMinClassBytes);
    Fill(a, i);
  }
  // Patterns written after each other survive: no two allocations overlap.
  for (size_t i = 0; i < live.size(); ++i) EXPECT_TRUE(Check(live[i], i)) << sizes[i];
  for (Allocation& a : live) alloc->Free(&a);
  EXPECT_EQ(alloc->used_bytes(), 0u);
  EXPECT_EQ(alloc->slabs().object_bytes_in_use(), 0u);
}

TEST(DramAllocatorTest, EmptySlabPagesGoBackToThePool) {
  auto alloc = MakeAllocator(16);
  std::vector<Allocation> small;
  // 2 KiB objects: 32 per page; 200 of them take 7 slab pages.
  for (int i = 0; i < 200; ++i) {
    small.emplace_back();
    ASSERT_TRUE(alloc->TryAllocate(2048, &small.back()));
  }
  EXPECT_EQ(alloc->slabs().slab_pages(), 7u);
  Allocation big;
  EXPECT_FALSE(alloc->TryAllocate(16 * kPage, &big));
  EXPECT_TRUE(big.empty());
  for (Allocation& a : small) alloc->Free(&a);
  EXPECT_EQ(alloc->slabs().slab_pages(), 0u);
  EXPECT_EQ(alloc->used_bytes(), 0u);
  ASSERT_TRUE(alloc->TryAllocate(16 * kPage, &big));  // every page usable by large chunks
  alloc->Free(&big);
}

TEST(DramAllocatorTest, ExhaustionFailsCleanlyAndRecovers) {
  auto alloc = MakeAllocator(8);
  std::vector<Allocation> live;
  for (;;) {
    Allocation a;
    if (!alloc->TryAllocate(kPage + 5000, &a)) {
      EXPECT_TRUE(a.empty());
      break;
    }
    live.push_back(std::move(a));
    ASSERT_LE(alloc->used_bytes(), alloc->capacity_bytes());
  }
  EXPECT_GE(live.size(), 6u);  // 1 page + a shared 5000-byte slab object each
  const uint64_t used = alloc->used_bytes();
  Allocation a;
  EXPECT_FALSE(alloc->TryAllocate(2 * kPage, &a));
  EXPECT_EQ(alloc->used_bytes(), used);  // a failed attempt gives back what it took
  alloc->Free(&live.back());
  live.pop_back();
  EXPECT_TRUE(alloc->TryAllocate(kPage + 5000, &a));
  alloc->Free(&a);
  for (Allocation& l : live) alloc->Free(&l);
  EXPECT_EQ(alloc->used_bytes(), 0u);
}

TEST(DramAllocatorTest, TailFailureReturnsTheWholePages) {
  auto alloc = MakeAllocator(4);
  Allocation three;
  ASSERT_TRUE(alloc->TryAllocate(3 * kPage, &three));
  Allocation a;
  // One whole page fits, but the tail then needs a slab page that is not there.
  EXPECT_FALSE(alloc->TryAllocate(kPage + 100, &a));
  EXPECT_EQ(alloc->used_bytes(), 3 * kPage);
  alloc->Free(&three);
}

TEST(DramAllocatorTest, RandomChurnStaysWithinCapacity) {
  auto alloc = MakeAllocator(64);
  std::mt19937_64 rng(42);
  std::vector<std::pair<Allocation, uint64_t>> live;
  for (int step = 0; step < 1500; ++step) {
    if (!live.empty() && (rng() % 3 == 0 || alloc->used_bytes() == alloc->capacity_bytes())) {
      const size_t victim = rng() % live.size();
      ASSERT_TRUE(Check(live[victim].first, live[victim].second));
      alloc->Free(&live[victim].first);
      live[victim] = std::move(live.back());
      live.pop_back();
      continue;
    }
    const uint64_t size = 1 + rng() % (rng() % 4 == 0 ? 5 * kPage : kPage / 2);
    Allocation a;
    if (!alloc->TryAllocate(size, &a)) continue;
    Fill(a, step);
    live.emplace_back(std::move(a), step);
    ASSERT_LE(alloc->used_bytes(), alloc->capacity_bytes());
  }
  for (auto& [a, seed] : live) {
    EXPECT_TRUE(Check(a, seed));
    alloc->Free(&a);
  }
  EXPECT_EQ(alloc->used_bytes(), 0u);
}

TEST(DramAllocatorTest, MovedFromAllocationIsEmpty) {
  auto alloc = MakeAllocator(4);
  Allocation a;
  ASSERT_TRUE(alloc->TryAllocate(kPage + 10, &a));
  Allocation b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the contract under test
  EXPECT_EQ(b.num_pages, 1u);
  alloc->Free(&a);  // no-op
  alloc->Free(&b);
  EXPECT_EQ(alloc->used_bytes(), 0u);
}

}  // namespace
}  // namespace kvstash::storage
