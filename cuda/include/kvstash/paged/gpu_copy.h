// The GPU paged copy op: gather (paged cache -> chunk) and scatter (chunk -> paged cache)
// in one kernel family, for every LayoutKind, element size 1/2/4 and any alignment
// (16-byte vectors when every address and stride allows, narrower otherwise).
//
//   PagedCopyArgs args;                       // see layout.h
//   Status s = GpuPagedCopy::Run(args, stream);  // checks args, launches, checks the launch
//
// Only compiled when the CUDA toolkit is present (target kvstash_cuda).
//
// Thread-safety: stateless; concurrent Runs on different streams are fine.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kvstash/paged/layout.h"

namespace kvstash::paged {

// Number of CUDA devices this process can use. 0 when there is no driver or no GPU
// (cudaGetDeviceCount then fails, e.g. with error 35 cudaErrorInsufficientDriver on a host
// with the toolkit but no GPU); that is not an error. `why`, when given, receives the
// reason for 0.
int CudaDeviceCount(std::string* why = nullptr);

// Converts a CUDA error into a Status (kInternal) naming the call; OK for cudaSuccess.
Status CudaStatus(cudaError_t err, const char* what);

// How a Run would launch (for benchmarks and logs).
struct LaunchInfo {
  int32_t launches = 0;   // one per 64 layers
  int32_t grid = 0;       // CTAs of the first launch
  int32_t threads = 0;    // per CTA
  int32_t vec_bytes = 0;  // vector width chosen
  int32_t team_threads = 0;
  int64_t work_items = 0;
};

class GpuPagedCopy {
 public:
  // CanImplement(args) from layout.h; the GPU op has no further restrictions.
  static Status CanImplement(const PagedCopyArgs& args);
  // Enqueues the copy on `stream` (of the current device). Returns kInvalidArgument for
  // arguments it cannot implement (nothing is launched), kInternal when a launch fails.
  // REQUIRES: the pointers in args are valid on the current device (block_ids included);
  // block ids outside [0, num_blocks) are skipped on the device, their bytes untouched.
  static Status Run(const PagedCopyArgs& args, cudaStream_t stream);
  // The launch Run would make on the current device.
  static Status Describe(const PagedCopyArgs& args, LaunchInfo* info);
};

}  // namespace kvstash::paged
