// The launch plan of the paged copy kernel and the per-thread copy routine, shared by the
// CUDA kernel (paged_copy.cu) and a host emulation of the launch (EmulateOnHost) that the
// CPU tests run, so the kernel's work split is tested on hosts without a GPU.
//
// Work split. A *segment* is one (layer, K|V, block, head group) of the transfer:
//   - block-contiguous layouts (NHD, FlashInfer NHD, MLA, cross-layer, SGLang): one
//     segment per (layer, kv, block) = the block's valid tokens, one contiguous run on
//     both sides (valid_tokens * row_bytes);
//   - HND layouts: one segment per (layer, kv, block, head) = valid_tokens rows of
//     head_dim elements, contiguous in the paged block, row_bytes apart in the chunk.
// A segment is cut into tiles of team_threads * kUnroll vectors. A *team* (a power-of-two
// group of threads, 32..kCtaThreads, sized to the segment so small segments do not idle
// a whole CTA) copies one tile per work item; items are handed out grid-stride, so any
// grid size, including a small CTA cap, covers all the work. Segment decoding (a few
// integer divisions and one block-id load) happens once per item; the inner loop is
// kUnroll independent vector loads followed by kUnroll stores.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <cstring>

#include "kvstash/paged/layout.h"

#if defined(__CUDACC__)
#define KVSTASH_HD __host__ __device__ __forceinline__
#else
#define KVSTASH_HD inline
#endif
#if defined(__CUDACC__)
#define KVSTASH_UNROLL _Pragma("unroll")
#else
#define KVSTASH_UNROLL _Pragma("GCC unroll 4")
#endif

namespace kvstash::paged::internal {

inline constexpr int kCtaThreads = 1024;     // threads per CTA
inline constexpr int kUnroll = 8;            // vector loads in flight per thread
inline constexpr int kMaxLaunchLayers = 64;  // layers per launch (pointers ride in params)

struct CopyPlan {
  // Paged side: tensor base of (layer in this launch, kv), layer and K|V offsets applied.
  char* base[kMaxLaunchLayers][2];
  const int32_t* block_ids;                         // [blocks_used], skip_blocks applied
  int64_t block_stride, token_stride, head_stride;  // bytes
  int32_t num_blocks;
  // Chunk side: [layers][kv_count][num_tokens][row_bytes], first layer of this launch.
  char* chunk;
  int64_t chunk_kv_bytes;  // num_tokens * row_bytes
  int32_t row_bytes, head_bytes;
  int32_t num_tokens, block_size;
  // Segment index = ((layer * kv_count + kv) * blocks_used + block) * seg_heads + head.
  int32_t layers, kv_count, blocks_used, seg_heads;
  int32_t gather;      // 1: paged -> chunk, 0: chunk -> paged
  int32_t contiguous;  // 1: segments are one run; 0: rows of head_bytes (HND)
  int32_t vec_bytes;   // 16, 8, 4, 2 or 1
  int32_t row_vecs;    // vectors per row when !contiguous
  int32_t row_shift;   // log2(row_vecs) when a power of two, else -1
  // Work split.
  int32_t team_threads, teams_per_cta, tile_vecs, tiles_per_seg;
  int64_t num_items;  // < 2^31
  int32_t grid;       // CTAs to launch
};

// Builds the plans of `args` (one per kMaxLaunchLayers layers). `device_ctas` is the
// number of CTAs that fill the device (the grid when args.max_ctas is 0).
// REQUIRES: CanImplement(args).ok(); plans has room for ceil(layers / 64) entries.
Status MakePlans(const PagedCopyArgs& args, int32_t device_ctas, CopyPlan* plans,
                 int32_t* num_plans);

// Runs every plan of `args` on the calling thread, thread by thread, exactly as the kernel
// would (all pointers host memory). For tests.
Status EmulateOnHost(const PagedCopyArgs& args, int32_t device_ctas);

template <typename V>
KVSTASH_HD V LoadVec(const char* p) {
#if defined(__CUDA_ARCH__)
  return __ldcs(reinterpret_cast<const V*>(p));  // streamed: read once, keep L2 for the model
#else
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
#endif
}

template <typename V>
KVSTASH_HD void StoreVec(char* p, const V& v) {
#if defined(__CUDA_ARCH__)
  __stcs(reinterpret_cast<V*>(p), v);
#else
  std::memcpy(p, &v, sizeof(V));
#endif
}

// Byte offsets of vector `i` of a segment on the paged and the chunk side.
template <typename V>
KVSTASH_HD void VecOffsets(const CopyPlan& p, int32_t i, int64_t* paged, int64_t* chunk) {
  if (p.contiguous) {
    *paged = *chunk = int64_t{i} * static_cast<int64_t>(sizeof(V));
    return;
  }
  const int32_t r = p.row_shift >= 0 ? (i >> p.row_shift) : i / p.row_vecs;
  const int64_t c = int64_t{i - r * p.row_vecs} * static_cast<int64_t>(sizeof(V));
  *paged = r * p.token_stride + c;
  *chunk = int64_t{r} * p.row_bytes + c;
}

// Copies this lane's share of work item `item`.
// Unsigned 32-bit division throughout: num_items < 2^31 (MakePlans checks), and 64-bit
// division is a long subroutine on the GPU.
template <typename V>
KVSTASH_HD void CopyItemLane(const CopyPlan& p, uint32_t item, int32_t lane) {
  uint32_t seg = item / static_cast<uint32_t>(p.tiles_per_seg);
  const int32_t tile = static_cast<int32_t>(item - seg * static_cast<uint32_t>(p.tiles_per_seg));
  const int32_t head = static_cast<int32_t>(seg % static_cast<uint32_t>(p.seg_heads));
  seg /= static_cast<uint32_t>(p.seg_heads);
  const int32_t j = static_cast<int32_t>(seg % static_cast<uint32_t>(p.blocks_used));
  seg /= static_cast<uint32_t>(p.blocks_used);
  const int32_t kv = static_cast<int32_t>(seg % static_cast<uint32_t>(p.kv_count));
  const int32_t layer = static_cast<int32_t>(seg / static_cast<uint32_t>(p.kv_count));
  const int32_t block = p.block_ids[j];
  if (block < 0 || block >= p.num_blocks) return;  // out-of-range id: leave bytes untouched
  const int32_t rows = p.num_tokens - j * p.block_size < p.block_size
                           ? p.num_tokens - j * p.block_size
                           : p.block_size;
  char* paged = p.base[layer][kv] + block * p.block_stride + head * p.head_stride;
  char* chunk = p.chunk + (layer * p.kv_count + kv) * p.chunk_kv_bytes +
                int64_t{j} * p.block_size * p.row_bytes + int64_t{head} * p.head_bytes;
  const int32_t n = p.contiguous ? rows * (p.row_bytes / p.vec_bytes) : rows * p.row_vecs;
  const int32_t tile_end = (tile + 1) * p.tile_vecs;
  const int32_t end = n < tile_end ? n : tile_end;
  const char* src = p.gather ? paged : chunk;
  char* dst = p.gather ? chunk : paged;
  for (int32_t i0 = tile * p.tile_vecs + lane; i0 < end; i0 += p.team_threads * kUnroll) {
    V v[kUnroll] = {};
    int64_t src_off[kUnroll] = {}, dst_off[kUnroll] = {};
    KVSTASH_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      const int32_t i = i0 + u * p.team_threads;
      if (i < end) {
        int64_t po, co;
        VecOffsets<V>(p, i, &po, &co);
        src_off[u] = p.gather ? po : co;
        dst_off[u] = p.gather ? co : po;
        v[u] = LoadVec<V>(src + src_off[u]);
      }
    }
    KVSTASH_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      if (i0 + u * p.team_threads < end) StoreVec<V>(dst + dst_off[u], v[u]);
    }
  }
}

}  // namespace kvstash::paged::internal
