#include "tests/gpu_buffers.h"

#include <cuda_runtime_api.h>

#include <cstring>

namespace kvstash::paged::testing {

DeviceCache::DeviceCache(const PagedLayout& layout) {
  const size_t k = layout.kind == LayoutKind::kCrossLayer ? 1 : size_t(layout.num_layers);
  const size_t n = layout.kind == LayoutKind::kSglangPool ? 2 * k : k;
  tensor_bytes_ = static_cast<size_t>(LayerTensorBytes(layout));
  for (size_t i = 0; i < n && status_.ok(); ++i) {
    void* p = nullptr;
    status_ = CudaStatus(cudaMalloc(&p, tensor_bytes_), "cudaMalloc(paged tensor)");
    if (status_.ok()) tensors_.push_back(p);
    (i < k ? ptrs_ : v_ptrs_).push_back(p);
  }
}

DeviceCache::~DeviceCache() {
  for (void* p : tensors_) cudaFree(p);
}

Status DeviceCache::Upload(const HostCache& host) {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    Status s = CudaStatus(
        cudaMemcpy(tensors_[i], host.tensors()[i].data(), tensor_bytes_, cudaMemcpyHostToDevice),
        "cudaMemcpy(upload)");
    if (!s.ok()) return s;
  }
  return status_;
}

Status DeviceCache::Download(HostCache* host) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    Status s = CudaStatus(
        cudaMemcpy(host->tensors()[i].data(), tensors_[i], tensor_bytes_, cudaMemcpyDeviceToHost),
        "cudaMemcpy(download)");
    if (!s.ok()) return s;
  }
  return status_;
}

Status DeviceCache::Fill(uint8_t byte) {
  for (void* p : tensors_) {
    Status s = CudaStatus(cudaMemset(p, byte, tensor_bytes_), "cudaMemset");
    if (!s.ok()) return s;
  }
  return status_;
}

ChunkBuffer::ChunkBuffer(size_t bytes, bool mapped_host)
    : bytes_(bytes), mapped_host_(mapped_host) {
  if (mapped_host) {
    void* h = nullptr;
    status_ = CudaStatus(cudaHostAlloc(&h, bytes, cudaHostAllocMapped), "cudaHostAlloc");
    host_ = static_cast<char*>(h);
    void* d = nullptr;
    if (status_.ok())
      status_ = CudaStatus(cudaHostGetDevicePointer(&d, h, 0), "cudaHostGetDevicePointer");
    device_ = static_cast<char*>(d);
    return;
  }
  void* d = nullptr;
  status_ = CudaStatus(cudaMalloc(&d, bytes), "cudaMalloc(chunk)");
  device_ = static_cast<char*>(d);
}

ChunkBuffer::~ChunkBuffer() {
  if (mapped_host_) {
    if (host_) cudaFreeHost(host_);
  } else if (device_) {
    cudaFree(device_);
  }
}

Status ChunkBuffer::Upload(const std::vector<uint8_t>& bytes) {
  if (!status_.ok()) return status_;
  if (mapped_host_) {
    std::memcpy(host_, bytes.data(), bytes_);
    return Status::Ok();
  }
  return CudaStatus(cudaMemcpy(device_, bytes.data(), bytes_, cudaMemcpyHostToDevice),
                    "cudaMemcpy(chunk upload)");
}

Status ChunkBuffer::Download(std::vector<uint8_t>* bytes) const {
  bytes->resize(bytes_);
  if (!status_.ok()) return status_;
  if (mapped_host_) {
    std::memcpy(bytes->data(), host_, bytes_);
    return Status::Ok();
  }
  return CudaStatus(cudaMemcpy(bytes->data(), device_, bytes_, cudaMemcpyDeviceToHost),
                    "cudaMemcpy(chunk download)");
}

IdBuffer::IdBuffer(const std::vector<int32_t>& ids, bool mapped_host)
    : chunk_(ids.size() * sizeof(int32_t), mapped_host) {
  std::vector<uint8_t> bytes(ids.size() * sizeof(int32_t));
  std::memcpy(bytes.data(), ids.data(), bytes.size());
  status_ = chunk_.Upload(bytes);
}

IdBuffer::~IdBuffer() = default;

}  // namespace kvstash::paged::testing
