// ArenaView: this process's mapping of the daemon's DRAM arena, as a same-host client
// reads and writes chunks in it (UCX direct access, the local arena socket): checking the
// runs the daemon names, and mapping the pages a copy touches ahead of it.
//
// Thread-safety: thread-safe; pages are marked mapped with atomic bits, so concurrent
// copies may map the same stretch twice, which is harmless.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/parallel_copy.h"

namespace kvstash::client_internal {

class ArenaView {
 public:
  // The arena's `size` bytes at `data`, mapped by the owner, which unmaps them after the
  // view is gone.
  ArenaView(uint8_t* data, uint64_t size);

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

  // The arena bytes `runs` (wire::ucx::ArenaRun records) name for a chunk of `size`
  // bytes, or an empty vector when a run is empty, leaves the arena, or they do not add
  // up to `size`.
  std::vector<absl::Span<uint8_t>> Spans(absl::string_view runs, uint64_t size) const;

  // Maps the 4 KiB pages under `span` (one MADV_POPULATE_READ per unmapped stretch), each
  // once: a mapped page stays mapped (the daemon gives memory back only from free arena
  // pages, and a copy there would simply fault). Only the chunk's own pages are mapped:
  // populating a free one would allocate it again in the daemon's shared memory.
  void MapForCopy(absl::Span<uint8_t> span);

  // Maps `spans` (a chunk's bytes, from Spans) for copying and appends one copy per span
  // to `*copies`, between it and caller memory laid end to end: out of the arena to `dst`
  // (PlanReads), or into it from `src` (PlanWrites).
  void PlanReads(absl::Span<const absl::Span<uint8_t>> spans, void* dst,
                 std::vector<ParallelCopier::Range>* copies);
  void PlanWrites(absl::Span<const absl::Span<uint8_t>> spans, const void* src,
                  std::vector<ParallelCopier::Range>* copies);

 private:
  static constexpr uint64_t kPage = 4096;
  // Marks `page` mapped; true when it was not.
  bool Claim(uint64_t page);
  bool Mapped(uint64_t page) const;

  uint8_t* const data_;
  const uint64_t size_;
  const std::unique_ptr<std::atomic<uint64_t>[]> mapped_;  // a bit per kPage of the arena
};

}  // namespace kvstash::client_internal
