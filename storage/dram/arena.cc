#include "storage/dram/arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvstash::storage {
namespace {

constexpr uint64_t kDefaultHugePageBytes = 2ull << 20;

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The system's default huge page size (what MAP_HUGETLB without a size flag uses).
uint64_t SystemHugePageBytes() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return kDefaultHugePageBytes;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "Hugepagesize: %lu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib > 0 ? kib << 10 : kDefaultHugePageBytes;
}

// Maps `bytes` of anonymous memory aligned to `align`, trimming the over-mapped ends, so
// that transparent huge pages (2 MiB) can back whole pages of the arena.
void* MapAligned(uint64_t bytes, uint64_t align) {
  const uint64_t padded = bytes + align;
  void* p = mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = AlignUp(start, align);
  if (aligned > start) munmap(p, aligned - start);
  const uintptr_t end = start + padded;
  const uintptr_t used_end = aligned + bytes;
  if (end > used_end) munmap(reinterpret_cast<void*>(used_end), end - used_end);
  return reinterpret_cast<void*>(aligned);
}

int Log2(uint64_t v) {
  int s = 0;
  while ((uint64_t{1} << s) < v) ++s;
  return s;
}

// Faults in [p, p + bytes) for writing without writing a byte (pages may be in use by
// then); false where MADV_POPULATE_WRITE (Linux 5.14) is missing.
bool Prefault(void* p, uint64_t bytes) {
  constexpr int kMadvPopulateWrite = 23;
  return madvise(p, bytes, kMadvPopulateWrite) == 0;
}

absl::Status CheckGeometry(uint64_t capacity_bytes, uint64_t page_bytes) {
  const uint64_t num_pages = capacity_bytes / page_bytes;
  if (page_bytes < 4096 || (page_bytes & (page_bytes - 1)) != 0 || num_pages == 0 ||
      num_pages >= Arena::kNoPage) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad arena geometry: capacity ", capacity_bytes, ", page ", page_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Arena>> Arena::CreateOn(std::unique_ptr<ArenaMemory> memory,
                                                       uint64_t page_bytes, bool prefault) {
  if (absl::Status s = CheckGeometry(memory->size(), page_bytes); !s.ok()) return s;
  const uint64_t num_pages = memory->size() / page_bytes;
  std::unique_ptr<Arena> arena(
      new Arena(memory->data(), 0, page_bytes, num_pages, Backing::kSupplied));
  arena->supplied_ = std::move(memory);
  if (prefault) arena->StartPrefault(num_pages * page_bytes);
  return arena;
}

absl::StatusOr<std::unique_ptr<Arena>> Arena::Create(uint64_t capacity_bytes, uint64_t page_bytes,
                                                     HugePages huge, bool prefault) {
  if (absl::Status s = CheckGeometry(capacity_bytes, page_bytes); !s.ok()) return s;
  const uint64_t num_pages = capacity_bytes / page_bytes;
  const uint64_t bytes = num_pages * page_bytes;
  if (huge != HugePages::kOff) {
    const uint64_t map_bytes = AlignUp(bytes, SystemHugePageBytes());
    void* p = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p != MAP_FAILED) {
      std::unique_ptr<Arena> arena(
          new Arena(static_cast<uint8_t*>(p), map_bytes, page_bytes, num_pages, Backing::kHugeTlb));
      if (prefault) arena->StartPrefault(map_bytes);
      return arena;
    }
    if (huge == HugePages::kOn) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "huge_pages=on: mmap(MAP_HUGETLB) of ", map_bytes, " bytes failed: ",
          std::strerror(errno), "; reserve huge pages (vm.nr_hugepages) or use huge_pages=auto"));
    }
  }
  void* p = MapAligned(bytes, kDefaultHugePageBytes);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap of the DRAM arena (", bytes, " bytes) failed: ", std::strerror(errno)));
  }
  // Best effort: without THP support the arena simply uses small pages.
  const bool thp = huge == HugePages::kAuto && madvise(p, bytes, MADV_HUGEPAGE) == 0;
  if (huge == HugePages::kOff) madvise(p, bytes, MADV_NOHUGEPAGE);
  std::unique_ptr<Arena> arena(new Arena(static_cast<uint8_t*>(p), bytes, page_bytes, num_pages,
                                         thp ? Backing::kTransparentHuge : Backing::kPlain));
  if (prefault) arena->StartPrefault(bytes);
  return arena;
}

Arena::Arena(uint8_t* base, uint64_t map_bytes, uint64_t page_bytes, uint32_t num_pages,
             Backing backing)
    : base_(base),
      map_bytes_(map_bytes),
      page_bytes_(page_bytes),
      page_shift_(Log2(page_bytes)),
      num_pages_(num_pages),
      backing_(backing) {
  // Bookkeeping only: reserving the lists up front keeps FreePages allocation-free.
  free_.reserve(num_pages);
  clean_.reserve(num_pages);
}

Arena::~Arena() {
  {
    absl::MutexLock lock(&prefault_mu_);
    prefault_stop_ = true;
  }
  if (prefault_.joinable()) prefault_.join();
  if (supplied_ == nullptr) munmap(base_, map_bytes_);
}

void Arena::StartPrefault(uint64_t bytes) {
  prefault_ = std::thread([this, bytes] {
    // One slice under the lock at a time bounds how long a trim waits for it.
    constexpr uint64_t kSlice = 4ull << 20;
    for (uint64_t off = 0; off < bytes; off += kSlice) {
      absl::MutexLock lock(&prefault_mu_);
      if (prefault_stop_ || !Prefault(base_ + off, std::min(kSlice, bytes - off))) return;
    }
  });
}

bool Arena::AllocatePages(uint32_t n, absl::FunctionRef<void(uint32_t page)> take) {
  absl::MutexLock lock(&mu_);
  if (n > available_pages()) return false;
  for (uint32_t i = 0; i < n; ++i) {
    std::vector<uint32_t>& from = !free_.empty() ? free_ : clean_;
    if (!from.empty()) {
      take(from.back());
      from.pop_back();
    } else {
      take(next_fresh_++);
    }
  }
  pages_in_use_.fetch_add(n, std::memory_order_relaxed);
  return true;
}

uint32_t Arena::AllocatePage() {
  uint32_t page = kNoPage;
  AllocatePages(1, [&page](uint32_t p) { page = p; });
  return page;
}

void Arena::FreePages(uint32_t n, absl::FunctionRef<uint32_t(uint32_t i)> page_at) {
  absl::MutexLock lock(&mu_);
  // Pushed in reverse so that the next AllocatePages gets them back in address order.
  for (uint32_t i = n; i > 0; --i) free_.push_back(page_at(i - 1));
  pages_in_use_.fetch_sub(n, std::memory_order_relaxed);
  if (reserved_pages_.load(std::memory_order_relaxed) > 0) TrimLocked();
}

void Arena::SetReservedPages(uint32_t pages) {
  if (pages == reserved_pages()) return;
  absl::MutexLock lock(&mu_);
  reserved_pages_.store(pages, std::memory_order_relaxed);
  TrimLocked();
}

void Arena::TrimLocked() {
  // Huge TLB pages are reserved at mmap time and cannot be given back page by page.
  if (backing_ == Backing::kHugeTlb) return;
  const uint32_t keep = available_pages();
  if (free_.size() <= keep) return;
  {
    absl::MutexLock lock(&prefault_mu_);
    prefault_stop_ = true;
  }
  while (free_.size() > keep) {
    const uint32_t page = free_.back();
    free_.pop_back();
    // A shared mapping keeps its pages in the backing file: only MADV_REMOVE frees them.
    madvise(page_data(page), page_bytes_,
            backing_ == Backing::kSupplied ? MADV_REMOVE : MADV_DONTNEED);
    clean_.push_back(page);
  }
}

}  // namespace kvstash::storage
