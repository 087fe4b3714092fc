// The CPU backend, and the CUDA backend's factory when this build has no CUDA.
#include <algorithm>
#include <memory>
#include <vector>

#include "client/paged_backend.h"
#include "kvstash/paged/reference.h"

namespace kvstash::internal {
namespace {

// Thread-safety: one operation at a time (see PagedBackend).
class CpuPagedBackend final : public PagedBackend {
 public:
  absl::StatusOr<uint8_t*> AllocStaging(size_t bytes) override {
    buffers_.push_back(std::make_unique<uint8_t[]>(bytes));
    return buffers_.back().get();
  }
  void FreeStaging(uint8_t* buf) override {
    buffers_.erase(std::remove_if(buffers_.begin(), buffers_.end(),
                                  [buf](const auto& b) { return b.get() == buf; }),
                   buffers_.end());
  }
  absl::Status Begin(absl::Span<const int32_t> block_ids, void* user_stream) override {
    ids_ = block_ids;
    return absl::OkStatus();
  }
  absl::Status Copy(paged::PagedCopyArgs args) override {
    args.block_ids = ids_.data();
    args.num_block_ids = static_cast<int32_t>(ids_.size());
    return ToAbsl(paged::ReferenceCopy(args));
  }
  absl::StatusOr<Fence> Record() override { return Fence(); }
  absl::Status Sync(const Fence&) override { return absl::OkStatus(); }
  absl::Status StreamWait(const Fence&, void*) override { return absl::OkStatus(); }

 private:
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
  absl::Span<const int32_t> ids_;
};

}  // namespace

std::unique_ptr<PagedBackend> MakeCpuPagedBackend() { return std::make_unique<CpuPagedBackend>(); }

absl::Status ToAbsl(const paged::Status& s) {
  switch (s.code) {
    case paged::StatusCode::kOk:
      return absl::OkStatus();
    case paged::StatusCode::kInvalidArgument:
      return absl::InvalidArgumentError(s.message);
    case paged::StatusCode::kUnavailable:
      return absl::UnavailableError(s.message);
    default:
      return absl::InternalError(s.message);
  }
}

#if !defined(KVSTASH_HAVE_CUDA)
absl::StatusOr<std::unique_ptr<PagedBackend>> MakeCudaPagedBackend(int device) {
  return absl::UnavailableError(
      "device-memory paged caches need a CUDA build of kvstash (nvcc was not found when "
      "it was configured); use PagedMemory::kHost");
}
#endif

}  // namespace kvstash::internal
