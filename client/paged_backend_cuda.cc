// The CUDA backend of PagedTransfer (compiled only when the CUDA toolkit was found).
#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "client/paged_backend.h"
#include "kvstash/paged/gpu_copy.h"

namespace kvstash::internal {
namespace {

absl::Status Check(cudaError_t err, const char* what) {
  return ToAbsl(paged::CudaStatus(err, what));
}

// Thread-safety: one operation at a time (see PagedBackend); fences from any thread.
class CudaPagedBackend final : public PagedBackend {
 public:
  explicit CudaPagedBackend(int device) : device_(device) {}
  ~CudaPagedBackend() override {
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    for (const Staging& s : staging_) cudaFreeHost(s.host);
    if (dev_ids_ != nullptr) cudaFree(dev_ids_);
    if (host_ids_ != nullptr) cudaFreeHost(host_ids_);
    if (user_ready_ != nullptr) cudaEventDestroy(user_ready_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  absl::Status Init() {
    absl::Status s = Check(cudaSetDevice(device_), "cudaSetDevice");
    if (s.ok()) s = Check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
    if (s.ok()) {
      s = Check(cudaEventCreateWithFlags(&user_ready_, cudaEventDisableTiming), "event");
    }
    return s;
  }

  absl::StatusOr<uint8_t*> AllocStaging(size_t bytes) override {
    void* host = nullptr;
    void* dev = nullptr;
    absl::Status s = Check(cudaSetDevice(device_), "cudaSetDevice");
    if (s.ok()) {
      s = Check(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable),
                "cudaHostAlloc(staging)");
    }
    if (s.ok()) s = Check(cudaHostGetDevicePointer(&dev, host, 0), "cudaHostGetDevicePointer");
    if (!s.ok()) {
      if (host != nullptr) cudaFreeHost(host);
      return s;
    }
    staging_.push_back({static_cast<uint8_t*>(host), static_cast<uint8_t*>(dev), bytes});
    return static_cast<uint8_t*>(host);
  }

  void FreeStaging(uint8_t* buf) override {
    for (auto it = staging_.begin(); it != staging_.end(); ++it) {
      if (it->host == buf) {
        cudaFreeHost(buf);
        staging_.erase(it);
        return;
      }
    }
  }

  absl::Status Begin(absl::Span<const int32_t> block_ids, void* user_stream) override {
    absl::Status s = Check(cudaSetDevice(device_), "cudaSetDevice");
    if (s.ok()) s = Check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    if (s.ok() && block_ids.size() > ids_capacity_) s = GrowIds(block_ids.size());
    if (!s.ok()) return s;
    num_ids_ = static_cast<int32_t>(block_ids.size());
    std::memcpy(host_ids_, block_ids.data(), block_ids.size() * sizeof(int32_t));
    s = Check(cudaMemcpyAsync(dev_ids_, host_ids_, block_ids.size() * sizeof(int32_t),
                              cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync(block ids)");
    auto user = static_cast<cudaStream_t>(user_stream);
    if (s.ok()) s = Check(cudaEventRecord(user_ready_, user), "cudaEventRecord(user stream)");
    if (s.ok()) s = Check(cudaStreamWaitEvent(stream_, user_ready_, 0), "cudaStreamWaitEvent");
    return s;
  }

  absl::Status Copy(paged::PagedCopyArgs args) override {
    uint8_t* dev = DevicePointer(static_cast<uint8_t*>(args.chunk));
    if (dev == nullptr) return absl::InternalError("chunk is not a staging buffer");
    args.chunk = dev;
    args.block_ids = dev_ids_;
    args.num_block_ids = num_ids_;
    return ToAbsl(paged::GpuPagedCopy::Run(args, stream_));
  }

  absl::StatusOr<Fence> Record() override {
    cudaEvent_t ev = nullptr;
    absl::Status s = Check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "event");
    if (s.ok()) s = Check(cudaEventRecord(ev, stream_), "cudaEventRecord");
    if (!s.ok()) {
      if (ev != nullptr) cudaEventDestroy(ev);
      return s;
    }
    return Fence(static_cast<void*>(ev), [](void* e) { cudaEventDestroy(cudaEvent_t(e)); });
  }

  absl::Status Sync(const Fence& fence) override {
    return Check(cudaEventSynchronize(cudaEvent_t(fence.get())), "cudaEventSynchronize");
  }

  absl::Status StreamWait(const Fence& fence, void* stream) override {
    return Check(
        cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), cudaEvent_t(fence.get()), 0),
        "cudaStreamWaitEvent");
  }

 private:
  struct Staging {
    uint8_t* host;
    uint8_t* dev;
    size_t bytes;
  };

  absl::Status GrowIds(size_t n) {
    if (dev_ids_ != nullptr) cudaFree(dev_ids_);
    if (host_ids_ != nullptr) cudaFreeHost(host_ids_);
    dev_ids_ = nullptr;
    host_ids_ = nullptr;
    ids_capacity_ = 0;
    void* d = nullptr;
    void* h = nullptr;
    absl::Status s = Check(cudaMalloc(&d, n * sizeof(int32_t)), "cudaMalloc(block ids)");
    if (s.ok()) s = Check(cudaMallocHost(&h, n * sizeof(int32_t)), "cudaMallocHost(block ids)");
    dev_ids_ = static_cast<int32_t*>(d);
    host_ids_ = static_cast<int32_t*>(h);
    if (s.ok()) ids_capacity_ = n;
    return s;
  }

  // The device address of a host address inside a staging buffer; null when outside.
  uint8_t* DevicePointer(uint8_t* host) const {
    for (const Staging& s : staging_) {
      if (host >= s.host && host < s.host + s.bytes) return s.dev + (host - s.host);
    }
    return nullptr;
  }

  const int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t user_ready_ = nullptr;
  std::vector<Staging> staging_;
  int32_t* dev_ids_ = nullptr;
  int32_t* host_ids_ = nullptr;  // pinned, so the upload is asynchronous
  size_t ids_capacity_ = 0;
  int32_t num_ids_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PagedBackend>> MakeCudaPagedBackend(int device) {
  std::string why;
  const int count = paged::CudaDeviceCount(&why);
  if (count == 0) return absl::UnavailableError("no CUDA device (" + why + ")");
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError("cache.device " + std::to_string(device) + " of " +
                                      std::to_string(count) + " devices");
  }
  auto backend = std::make_unique<CudaPagedBackend>(device);
  absl::Status s = backend->Init();
  if (!s.ok()) return s;
  return backend;
}

}  // namespace kvstash::internal
