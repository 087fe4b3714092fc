#include "client/item_checks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace kvstash::client_internal {

namespace {

// Whether every page of [lo, hi) is mapped: msync(MS_ASYNC) only walks the mappings and
// fails with ENOMEM at a hole. Any other failure (an address past the top) counts as
// mapped, so a buffer this cannot judge is never refused.
bool RangeMapped(uintptr_t lo, uintptr_t hi) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = lo & ~(page - 1);
  const uintptr_t end = hi + (page - 1) < hi ? hi : (hi + page - 1) & ~(page - 1);
  return msync(reinterpret_cast<void*>(start), end - start, MS_ASYNC) == 0 || errno != ENOMEM;
}

// INVALID_ARGUMENT naming the first item whose bytes [data(i), data(i) + size(i)) are not all
// mapped in this process. One call covers the span of all of them; only when that span has a
// hole is each item checked on its own.
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
  for (size_t i = 0; i < n; ++i) {
    if (data(i) == nullptr || size(i) == 0) continue;
    const auto p = reinterpret_cast<uintptr_t>(data(i));
    if (!RangeMapped(p, p + size(i))) return refuse(i);
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
