// The paged copy kernel: one kernel, templated only on the vector type (5 instantiations);
// layout, direction and shape are runtime values in the CopyPlan (copy_plan.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "copy_plan.h"
#include "kvstash/paged/gpu_copy.h"

namespace kvstash::paged {
namespace {

using internal::CopyPlan;
using internal::kCtaThreads;

template <typename V>
__global__ void __launch_bounds__(kCtaThreads)
    PagedCopyKernel(const __grid_constant__ CopyPlan plan) {
  const int32_t team = static_cast<int32_t>(threadIdx.x) / plan.team_threads;
  const int32_t lane = static_cast<int32_t>(threadIdx.x) % plan.team_threads;
  // num_items < 2^31 and grid * teams_per_cta < 2^31: no overflow in 32 bits.
  const uint32_t items = static_cast<uint32_t>(plan.num_items);
  const uint32_t stride = gridDim.x * static_cast<uint32_t>(plan.teams_per_cta);
  for (uint32_t w = blockIdx.x * plan.teams_per_cta + team; w < items; w += stride) {
    internal::CopyItemLane<V>(plan, w, lane);
  }
}

cudaError_t Launch(const CopyPlan& plan, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(plan.grid)), block(kCtaThreads);
  switch (plan.vec_bytes) {
    case 16:
      PagedCopyKernel<uint4><<<grid, block, 0, stream>>>(plan);
      break;
    case 8:
      PagedCopyKernel<uint2><<<grid, block, 0, stream>>>(plan);
      break;
    case 4:
      PagedCopyKernel<unsigned int><<<grid, block, 0, stream>>>(plan);
      break;
    case 2:
      PagedCopyKernel<unsigned short><<<grid, block, 0, stream>>>(plan);
      break;
    default:
      PagedCopyKernel<unsigned char><<<grid, block, 0, stream>>>(plan);
      break;
  }
  return cudaGetLastError();
}

// CTAs that fill the current device: SMs x resident CTAs per SM (registers bound it below
// the 2048-thread limit).
Status DeviceCtas(int32_t* ctas) {
  int device = 0, sms = 0, per_sm = 0;
  Status s = CudaStatus(cudaGetDevice(&device), "cudaGetDevice");
  if (s.ok()) {
    s = CudaStatus(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                   "cudaDeviceGetAttribute(MultiProcessorCount)");
  }
  if (s.ok()) {
    s = CudaStatus(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, PagedCopyKernel<uint4>,
                                                                 kCtaThreads, 0),
                   "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  }
  *ctas = sms * std::max(1, per_sm);
  return s;
}

Status Plan(const PagedCopyArgs& args, std::vector<CopyPlan>* plans) {
  Status s = CanImplement(args);
  int32_t ctas = 0;
  if (s.ok()) s = DeviceCtas(&ctas);
  if (!s.ok()) return s;
  plans->resize((args.layers() + internal::kMaxLaunchLayers - 1) / internal::kMaxLaunchLayers);
  int32_t n = 0;
  s = internal::MakePlans(args, ctas, plans->data(), &n);
  plans->resize(n);
  return s;
}

}  // namespace

int CudaDeviceCount(std::string* why) {
  int count = 0;  // left untouched by a failing call
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) {
      *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + " (" +
             std::to_string(static_cast<int>(err)) + "): " + cudaGetErrorString(err);
    }
    cudaGetLastError();  // the error is not sticky; clear it so later checks start clean
    return 0;
  }
  if (count == 0 && why) *why = "cudaGetDeviceCount: 0 devices";
  return count;
}

Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return {StatusCode::kInternal,
          std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err)};
}

Status GpuPagedCopy::CanImplement(const PagedCopyArgs& args) { return paged::CanImplement(args); }

Status GpuPagedCopy::Run(const PagedCopyArgs& args, cudaStream_t stream) {
  std::vector<CopyPlan> plans;
  Status s = Plan(args, &plans);
  for (size_t i = 0; s.ok() && i < plans.size(); ++i) {
    s = CudaStatus(Launch(plans[i], stream), "PagedCopyKernel launch");
  }
  return s;
}

Status GpuPagedCopy::Describe(const PagedCopyArgs& args, LaunchInfo* info) {
  std::vector<CopyPlan> plans;
  Status s = Plan(args, &plans);
  if (!s.ok() || plans.empty()) return s;
  const CopyPlan& p = plans.front();
  *info = {static_cast<int32_t>(plans.size()),
           p.grid,
           kCtaThreads,
           p.vec_bytes,
           p.team_threads,
           p.num_items};
  return Status::Ok();
}

}  // namespace kvstash::paged
