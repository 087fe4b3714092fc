#include "client/item_checks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kvstash::client_internal {

namespace {

// Whether every page of [lo, hi) is mapped: msync(MS_ASYNC) only walks the mappings and
// fails with ENOMEM at a hole (or past the last mapping). Any other failure (msync refused
// by a sandbox) counts as mapped, so a buffer this cannot judge is never refused.
bool RangeMapped(uintptr_t lo, uintptr_t hi) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = lo & ~(page - 1);
  const uintptr_t end = hi + (page - 1) < hi ? hi : (hi + page - 1) & ~(page - 1);
  return msync(reinterpret_cast<void*>(start), end - start, MS_ASYNC) == 0 || errno != ENOMEM;
}

// INVALID_ARGUMENT naming the first item whose bytes [data(i), data(i) + size(i)) are not all
// mapped in this process. One call covers the span of all of them; only when that span has a
// hole are the items' own ranges, merged where they touch, checked one run at a time.
template <typename Data, typename Size>
absl::Status CheckMapped(const char* what, size_t n, Data data, Size size) {
  auto refuse = [&](size_t i) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", i, ": its ", size(i), " bytes at 0x",
                                                   absl::Hex(reinterpret_cast<uintptr_t>(data(i))),
                                                   " are not mapped in this process"));
  };
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    if (data(i) == nullptr || size(i) == 0) continue;
    const auto p = reinterpret_cast<uintptr_t>(data(i));
    if (p + size(i) < p) return refuse(i);  // past the end of the address space
    lo = std::min(lo, p);
    hi = std::max(hi, p + size(i));
  }
  if (lo >= hi || RangeMapped(lo, hi)) return absl::OkStatus();
  struct Range {
    uintptr_t lo, hi;
  };
  std::vector<Range> ranges;
  for (size_t i = 0; i < n; ++i) {
    if (data(i) == nullptr || size(i) == 0) continue;
    const auto p = reinterpret_cast<uintptr_t>(data(i));
    ranges.push_back({p, p + size(i)});
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::vector<Range> holes;  // merged runs that are not all mapped
  for (size_t k = 0; k < ranges.size();) {
    Range run = ranges[k++];
    while (k < ranges.size() && ranges[k].lo <= run.hi) run.hi = std::max(run.hi, ranges[k++].hi);
    if (!RangeMapped(run.lo, run.hi)) holes.push_back(run);
  }
  for (size_t i = 0; i < n && !holes.empty(); ++i) {
    if (data(i) == nullptr || size(i) == 0) continue;
    const auto p = reinterpret_cast<uintptr_t>(data(i));
    for (const Range& h : holes) {
      if (p >= h.lo && p < h.hi && !RangeMapped(p, p + size(i))) return refuse(i);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPutItems(absl::Span<const PutItem> items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].size == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("PutItem ", i, ": size is 0; a chunk holds at least one byte"));
    }
    if (items[i].data == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("PutItem ", i, ": data is null but size is ", items[i].size));
    }
  }
  return CheckMapped(
      "PutItem", items.size(), [&](size_t i) { return items[i].data; },
      [&](size_t i) { return items[i].size; });
}

absl::Status CheckGetItems(absl::Span<const GetItem> items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].data == nullptr && items[i].capacity > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("GetItem ", i, ": data is null but capacity is ", items[i].capacity));
    }
  }
  return CheckMapped(
      "GetItem", items.size(), [&](size_t i) { return items[i].data; },
      [&](size_t i) { return items[i].capacity; });
}

}  // namespace kvstash::client_internal
