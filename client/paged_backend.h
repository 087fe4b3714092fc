// Copy backends of PagedTransfer: where the paged copies run and what staging memory the
// network reads and writes.
//   - CPU: the CPU reference copies on the calling thread, plain host staging. Used for
//     host-memory caches, and everywhere on hosts without a GPU.
//   - CUDA (only in CUDA builds): the GPU op on a private stream, pinned staging mapped
//     into the device (the kernels read and write it directly, zero-copy), the block table
//     uploaded per request, events as fences.
//
// Thread-safety: a backend is used by one operation at a time (PagedTransfer serializes
// them); fences may be waited on from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kvstash/paged/layout.h"

namespace kvstash::internal {

// A point in the backend's copy order; null when copies are synchronous (CPU).
using Fence = std::shared_ptr<void>;

class PagedBackend {
 public:
  virtual ~PagedBackend() = default;

  // Staging memory the network reads/writes and the copies use; freed by FreeStaging or
  // with the backend.
  virtual absl::StatusOr<uint8_t*> AllocStaging(size_t bytes) = 0;
  // REQUIRES: no copy using `buf` is pending.
  virtual void FreeStaging(uint8_t* buf) = 0;
  // Starts a request: waits for every earlier copy, uploads the block table (REQUIRES:
  // ids stay valid until the request's last Sync) and orders later copies after the work
  // queued on `user_stream`.
  virtual absl::Status Begin(absl::Span<const int32_t> block_ids, void* user_stream) = 0;
  // Runs (CPU) or enqueues (CUDA) one copy. args.chunk is a staging address;
  // args.block_ids/num_block_ids are replaced by the table given to Begin.
  virtual absl::Status Copy(paged::PagedCopyArgs args) = 0;
  // A fence after every copy so far.
  virtual absl::StatusOr<Fence> Record() = 0;
  // Blocks until the fence's copies are done.
  virtual absl::Status Sync(const Fence& fence) = 0;
  // Makes `stream` wait on the device for the fence's copies.
  virtual absl::Status StreamWait(const Fence& fence, void* stream) = 0;
};

std::unique_ptr<PagedBackend> MakeCpuPagedBackend();
// UNAVAILABLE when this build has no CUDA or `device` is not usable (the message says why).
absl::StatusOr<std::unique_ptr<PagedBackend>> MakeCudaPagedBackend(int device);

// Maps a paged-op status to absl::Status.
absl::Status ToAbsl(const paged::Status& status);

}  // namespace kvstash::internal
