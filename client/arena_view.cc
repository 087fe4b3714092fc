#include "client/arena_view.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "proto/ucx_wire.h"

namespace kvstash::client_internal {
namespace {

// Maps [data, data + size) of our view of the arena in one call. The view starts empty,
// and a copy into it would otherwise take one page fault per 4 KiB: writes to shared
// memory get no fault-around. Populating for reading does (16 pages per fault by default),
// and since shared memory needs no write notification those pages are mapped writable:
// ~70 us per MiB on the build hosts against ~250 for MADV_POPULATE_WRITE and ~330 for the
// faults of the copy itself. Copies out of the arena fault too (one per 16 pages), at a
// cost above the copy's own. Best effort: kernels before 5.14 fault as usual.
void Populate(uint8_t* data, uint64_t size) {
  constexpr int kMadvPopulateRead = 22;
  const uintptr_t page = 4096;
  const uintptr_t start = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + size;
  (void)madvise(reinterpret_cast<void*>(start), end - start, kMadvPopulateRead);
}

}  // namespace

ArenaView::ArenaView(uint8_t* data, uint64_t size)
    : data_(data),
      size_(size),
      mapped_(new std::atomic<uint64_t>[((size + kPage - 1) / kPage + 63) / 64]()) {}

bool ArenaView::Mapped(uint64_t page) const {
  return (mapped_[page / 64].load(std::memory_order_relaxed) >> (page % 64)) & 1;
}

bool ArenaView::Claim(uint64_t page) {
  const uint64_t bit = uint64_t{1} << (page % 64);
  return (mapped_[page / 64].fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
}

std::vector<absl::Span<uint8_t>> ArenaView::Spans(absl::string_view runs, uint64_t size) const {
  std::vector<absl::Span<uint8_t>> spans;
  uint64_t total = 0;
  bool ok = !runs.empty() && runs.size() % sizeof(wire::ucx::ArenaRun) == 0;
  for (size_t at = 0; ok && at < runs.size(); at += sizeof(wire::ucx::ArenaRun)) {
    wire::ucx::ArenaRun r;
    std::memcpy(&r, runs.data() + at, sizeof(r));
    ok = r.length > 0 && r.offset <= size_ && r.length <= size_ - r.offset &&
         r.length <= size - total;
    if (ok) spans.emplace_back(data_ + r.offset, r.length);
    total += r.length;
  }
  if (ok && total == size) return spans;
  return {};
}

void ArenaView::PlanReads(absl::Span<const absl::Span<uint8_t>> spans, void* dst,
                          std::vector<ParallelCopier::Range>* copies) {
  auto* to = static_cast<uint8_t*>(dst);
  for (absl::Span<uint8_t> span : spans) {
    MapForCopy(span);
    copies->push_back({to, span.data(), span.size()});
    to += span.size();
  }
}

void ArenaView::PlanWrites(absl::Span<const absl::Span<uint8_t>> spans, const void* src,
                           std::vector<ParallelCopier::Range>* copies) {
  const auto* from = static_cast<const uint8_t*>(src);
  for (absl::Span<uint8_t> span : spans) {
    MapForCopy(span);
    copies->push_back({span.data(), from, span.size()});
    from += span.size();
  }
}

void ArenaView::MapForCopy(absl::Span<uint8_t> span) {
  const uint64_t begin = static_cast<uint64_t>(span.data() - data_);
  const uint64_t last = (begin + span.size() + kPage - 1) / kPage;
  for (uint64_t page = begin / kPage; page < last;) {
    if (Mapped(page)) {
      ++page;
      continue;
    }
    const uint64_t first = page;
    while (page < last && Claim(page)) ++page;
    if (page == first) continue;  // another copy claimed it just now
    const uint64_t offset = first * kPage;
    Populate(data_ + offset, std::min((page - first) * kPage, size_ - offset));
  }
}

}  // namespace kvstash::client_internal
