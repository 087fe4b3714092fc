// Device-side fixtures for the GPU tests and the kernel benchmark: a paged cache in device
// memory mirroring a HostCache, chunk buffers in device or mapped pinned host memory, and
// block tables. Every CUDA call is checked; a failed allocation leaves ok() false.
//
// Thread-safety: owning values, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kvstash/paged/gpu_copy.h"
#include "tests/paged_test_util.h"

namespace kvstash::paged::testing {

class DeviceCache {
 public:
  explicit DeviceCache(const PagedLayout& layout);
  ~DeviceCache();
  DeviceCache(const DeviceCache&) = delete;
  DeviceCache& operator=(const DeviceCache&) = delete;

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  Status Upload(const HostCache& host);
  Status Download(HostCache* host) const;
  Status Fill(uint8_t byte);
  void* const* layer_ptrs() const { return ptrs_.data(); }
  void* const* v_layer_ptrs() const { return v_ptrs_.empty() ? nullptr : v_ptrs_.data(); }

 private:
  Status status_;
  size_t tensor_bytes_ = 0;
  std::vector<void*> tensors_;  // K (or K|V) tensors, then V pools
  std::vector<void*> ptrs_, v_ptrs_;
};

// A chunk buffer: device memory, or pinned host memory mapped into the device.
class ChunkBuffer {
 public:
  ChunkBuffer(size_t bytes, bool mapped_host);
  ~ChunkBuffer();
  ChunkBuffer(const ChunkBuffer&) = delete;
  ChunkBuffer& operator=(const ChunkBuffer&) = delete;

  bool ok() const { return status_.ok(); }
  char* device_ptr() const { return device_; }
  Status Upload(const std::vector<uint8_t>& bytes);  // REQUIRES: bytes.size() == size
  Status Download(std::vector<uint8_t>* bytes) const;

 private:
  Status status_;
  size_t bytes_ = 0;
  bool mapped_host_ = false;
  char* host_ = nullptr;    // mapped_host only
  char* device_ = nullptr;  // the device address (of host_ when mapped)
};

// A block table the kernel can read: device memory or mapped pinned host memory.
class IdBuffer {
 public:
  IdBuffer(const std::vector<int32_t>& ids, bool mapped_host);
  ~IdBuffer();
  IdBuffer(const IdBuffer&) = delete;
  IdBuffer& operator=(const IdBuffer&) = delete;

  bool ok() const { return status_.ok(); }
  const int32_t* device_ptr() const {
    return reinterpret_cast<const int32_t*>(chunk_.device_ptr());
  }

 private:
  ChunkBuffer chunk_;
  Status status_;
};

}  // namespace kvstash::paged::testing
