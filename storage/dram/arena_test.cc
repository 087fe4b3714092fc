#include "storage/dram/arena.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace kvstash::storage {
namespace {

constexpr uint64_t kPage = 64 << 10;
using HugePages = Arena::HugePages;

std::unique_ptr<Arena> MakeArena(uint64_t capacity, HugePages huge = HugePages::kOff) {
  auto arena = Arena::Create(capacity, kPage, huge);
  EXPECT_TRUE(arena.ok()) << arena.status();
  return arena.ok() ? *std::move(arena) : nullptr;
}

std::vector<uint32_t> Take(Arena& arena, uint32_t n) {
  std::vector<uint32_t> pages;
  EXPECT_TRUE(arena.AllocatePages(n, [&](uint32_t p) { pages.push_back(p); }));
  return pages;
}

// Bytes of the arena that are resident in RAM.
uint64_t ResidentBytes(const Arena& arena) {
  const long sys_page = sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> vec(arena.capacity_bytes() / sys_page);
  EXPECT_EQ(mincore(const_cast<uint8_t*>(arena.base()), arena.capacity_bytes(), vec.data()), 0);
  uint64_t resident = 0;
  for (unsigned char v : vec) resident += (v & 1) ? sys_page : 0;
  return resident;
}

TEST(ArenaTest, GeometryRoundsCapacityDownToPages) {
  auto arena = MakeArena(10 * kPage + kPage / 2);
  ASSERT_NE(arena, nullptr);
  EXPECT_EQ(arena->num_pages(), 10u);
  EXPECT_EQ(arena->capacity_bytes(), 10 * kPage);
  EXPECT_EQ(arena->backing(), Arena::Backing::kPlain);
  EXPECT_EQ(arena->pages_in_use(), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena->base()) % kPage, 0u);
}

TEST(ArenaTest, AllocatesAllOrNothing) {
  auto arena = MakeArena(8 * kPage);
  std::vector<uint32_t> first = Take(*arena, 5);
  EXPECT_EQ(arena->pages_in_use(), 5u);
  int calls = 0;
  EXPECT_FALSE(arena->AllocatePages(4, [&](uint32_t) { ++calls; }));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(arena->pages_in_use(), 5u);
  std::vector<uint32_t> rest = Take(*arena, 3);
  EXPECT_EQ(arena->AllocatePage(), Arena::kNoPage);
  std::vector<bool> seen(8, false);
  for (uint32_t p : first) seen[p] = true;
  for (uint32_t p : rest) seen[p] = true;
  for (bool s : seen) EXPECT_TRUE(s);  // every page handed out exactly once
}

TEST(ArenaTest, ReusesFreedPagesBeforeFreshOnes) {
  auto arena = MakeArena(8 * kPage);
  std::vector<uint32_t> pages = Take(*arena, 3);
  arena->FreePages(2, [&](uint32_t i) { return pages[i]; });
  EXPECT_EQ(arena->pages_in_use(), 1u);
  std::vector<uint32_t> again = Take(*arena, 2);
  EXPECT_EQ(again, (std::vector<uint32_t>{pages[0], pages[1]}));
}

TEST(ArenaTest, PageAddressesRoundTrip) {
  auto arena = MakeArena(4 * kPage);
  for (uint32_t p = 0; p < 4; ++p) {
    uint8_t* d = arena->page_data(p);
    EXPECT_EQ(arena->page_of(d), p);
    EXPECT_EQ(arena->page_of(d + kPage - 1), p);
    EXPECT_TRUE(arena->contains(d));
  }
  EXPECT_FALSE(arena->contains(arena->page_data(3) + kPage));
}

TEST(ArenaTest, UntouchedPagesStayOutOfRss) {
  auto arena = MakeArena(64 * kPage);
  EXPECT_EQ(ResidentBytes(*arena), 0u);
  for (uint32_t p : Take(*arena, 3)) std::memset(arena->page_data(p), 0xAB, kPage);
  EXPECT_EQ(ResidentBytes(*arena), 3 * kPage);
  EXPECT_LE(ResidentBytes(*arena), uint64_t{arena->pages_in_use()} * kPage);
}

TEST(ArenaTest, ReservedPagesAreNotHandedOutAndSurplusFreePagesLeaveRss) {
  auto arena = MakeArena(16 * kPage);
  std::vector<uint32_t> pages = Take(*arena, 10);
  for (uint32_t p : pages) std::memset(arena->page_data(p), 0xCD, kPage);
  arena->FreePages(10, [&](uint32_t i) { return pages[i]; });
  EXPECT_EQ(ResidentBytes(*arena), 10 * kPage);  // kept for reuse while nothing is reserved

  arena->SetReservedPages(12);
  EXPECT_EQ(arena->available_pages(), 4u);
  EXPECT_EQ(ResidentBytes(*arena), 4 * kPage);  // only what may still be handed out
  EXPECT_FALSE(arena->AllocatePages(5, [](uint32_t) {}));
  pages = Take(*arena, 4);
  EXPECT_EQ(arena->available_pages(), 0u);

  arena->SetReservedPages(0);
  EXPECT_EQ(arena->available_pages(), 12u);
  std::vector<uint32_t> more = Take(*arena, 12);  // given-back pages are usable again
  for (uint32_t p : more) std::memset(arena->page_data(p), 0xEF, kPage);
  EXPECT_EQ(arena->pages_in_use(), 16u);
}

TEST(ArenaTest, AutoHugePagesFallsBack) {
  auto arena = MakeArena(4 << 20, HugePages::kAuto);
  ASSERT_NE(arena, nullptr);
  // Hosts without reserved huge pages get THP, or plain pages where THP is compiled out.
  RecordProperty("backing", static_cast<int>(arena->backing()));
  uint32_t p = arena->AllocatePage();
  std::memset(arena->page_data(p), 1, kPage);  // the mapping is usable whatever backs it
}

TEST(ArenaTest, HugePagesOnFailsClearlyWithoutReservedPages) {
  auto arena = Arena::Create(4 << 20, kPage, HugePages::kOn);
  if (arena.ok()) {
    EXPECT_EQ((*arena)->backing(), Arena::Backing::kHugeTlb);
  } else {
    EXPECT_EQ(arena.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(arena.status().message().find("huge_pages=on"), absl::string_view::npos);
  }
}

// Shared memory from a memfd, as an owner would supply it; counts its destruction.
class MemfdMemory : public ArenaMemory {
 public:
  MemfdMemory(uint64_t bytes, bool* destroyed) : size_(bytes), destroyed_(destroyed) {
    fd_ = memfd_create("arena_test", 0);
    EXPECT_EQ(ftruncate(fd_, bytes), 0);
    data_ = static_cast<uint8_t*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
  }
  ~MemfdMemory() override {
    munmap(data_, size_);
    close(fd_);
    *destroyed_ = true;
  }
  uint8_t* data() const override { return data_; }
  uint64_t size() const override { return size_; }
  // Bytes the backing file holds in RAM.
  uint64_t backed_bytes() const {
    struct stat st;
    EXPECT_EQ(fstat(fd_, &st), 0);
    return uint64_t(st.st_blocks) * 512;
  }

 private:
  int fd_ = -1;
  uint8_t* data_ = nullptr;
  uint64_t size_;
  bool* destroyed_;
};

TEST(ArenaTest, SuppliedMemoryIsUsedTrimmedFromItsFileAndReleased) {
  bool destroyed = false;
  auto owned = std::make_unique<MemfdMemory>(16 * kPage + 100, &destroyed);
  MemfdMemory* memory = owned.get();
  auto created = Arena::CreateOn(std::move(owned), kPage, /*prefault=*/false);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Arena> arena = *std::move(created);
  EXPECT_EQ(arena->backing(), Arena::Backing::kSupplied);
  EXPECT_EQ(arena->num_pages(), 16u);
  EXPECT_EQ(arena->base(), memory->data());

  std::vector<uint32_t> pages = Take(*arena, 10);
  for (uint32_t p : pages) std::memset(arena->page_data(p), 0xCD, kPage);
  EXPECT_EQ(memory->backed_bytes(), 10 * kPage);
  arena->FreePages(10, [&](uint32_t i) { return pages[i]; });
  arena->SetReservedPages(12);  // 4 may still be handed out: 6 free pages leave the file
  EXPECT_EQ(memory->backed_bytes(), 4 * kPage);

  arena.reset();
  EXPECT_TRUE(destroyed);
}

// Polls `done` for up to 30 s.
template <typename Fn>
bool Eventually(Fn done) {
  for (int i = 0; i < 3000 && !done(); ++i) usleep(10000);
  return done();
}

// Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14), which the fault-in needs.
bool CanPrefault() {
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const bool ok = p != MAP_FAILED && madvise(p, 4096, /*MADV_POPULATE_WRITE=*/23) == 0;
  if (p != MAP_FAILED) munmap(p, 4096);
  return ok;
}

TEST(ArenaTest, PrefaultFaultsEveryPageInWithoutTouchingPagesInUse) {
  if (!CanPrefault()) GTEST_SKIP() << "no MADV_POPULATE_WRITE on this kernel";
  bool destroyed = false;
  auto owned = std::make_unique<MemfdMemory>(256 * kPage, &destroyed);
  MemfdMemory* memory = owned.get();
  auto created = Arena::CreateOn(std::move(owned), kPage, /*prefault=*/true);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Arena> arena = *std::move(created);
  // Pages handed out while the fault-in runs keep what their owner wrote.
  std::vector<uint32_t> pages = Take(*arena, 8);
  for (uint32_t p : pages) std::memset(arena->page_data(p), 0x5A, kPage);
  EXPECT_TRUE(Eventually([&] { return memory->backed_bytes() == 256 * kPage; }))
      << memory->backed_bytes() << " bytes faulted in";
  for (uint32_t p : pages) {
    const uint8_t* d = arena->page_data(p);
    EXPECT_TRUE(std::all_of(d, d + kPage, [](uint8_t b) { return b == 0x5A; })) << "page " << p;
  }
  arena.reset();
  EXPECT_TRUE(destroyed);
}

TEST(ArenaTest, PrefaultStopsAtTheFirstTrimAndWithTheArena) {
  // 4 GiB of address space, far more than the fault-in covers before the trim below.
  bool destroyed = false;
  auto owned = std::make_unique<MemfdMemory>(uint64_t{4} << 30, &destroyed);
  MemfdMemory* memory = owned.get();
  auto created = Arena::CreateOn(std::move(owned), kPage, /*prefault=*/true);
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Arena> arena = *std::move(created);
  std::vector<uint32_t> pages = Take(*arena, 4);
  arena->FreePages(4, [&](uint32_t i) { return pages[i]; });
  arena->SetReservedPages(arena->num_pages() - 2);  // 2 free pages leave the file
  const uint64_t after_trim = memory->backed_bytes();
  usleep(200000);
  EXPECT_EQ(memory->backed_bytes(), after_trim) << "faulted in again after the trim";
  EXPECT_LT(after_trim, uint64_t{4} << 30);

  // An arena destroyed while its fault-in runs stops it first.
  auto again = Arena::CreateOn(std::make_unique<MemfdMemory>(uint64_t{4} << 30, &destroyed), kPage,
                               /*prefault=*/true);
  ASSERT_TRUE(again.ok()) << again.status();
  destroyed = false;
  again->reset();
  EXPECT_TRUE(destroyed);
}

TEST(ArenaTest, SuppliedMemorySmallerThanAPageIsRefused) {
  bool destroyed = false;
  auto arena = Arena::CreateOn(std::make_unique<MemfdMemory>(kPage / 2, &destroyed), kPage, false);
  EXPECT_EQ(arena.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(destroyed);
}

}  // namespace
}  // namespace kvstash::storage
