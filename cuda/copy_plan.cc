#include "copy_plan.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kvstash/paged/reference.h"

namespace kvstash::paged::internal {
namespace {

// Largest of 16, 8, 4, 2, 1 dividing every value OR-ed into `bits`.
int32_t VecBytesFor(uint64_t bits) {
  for (int32_t v = 16; v > 1; v /= 2) {
    if ((bits & static_cast<uint64_t>(v - 1)) == 0) return v;
  }
  return 1;
}

int32_t NextPow2(int64_t x) {
  int32_t p = 1;
  while (p < x) p *= 2;
  return p;
}

// Fills the paged-side fields of `plan` for layers [first, first + count) of args.
uint64_t FillBases(const PagedCopyArgs& a, int32_t first, int32_t count, CopyPlan* plan) {
  const LayoutStrides s = StridesOf(a.layout);
  uint64_t bits = 0;
  for (int32_t i = 0; i < count; ++i) {
    const int32_t layer = first + i;
    for (int32_t kv = 0; kv < a.layout.kv_count(); ++kv) {
      char* t = static_cast<char*>(PagedTensorOf(a, layer, kv));
      const bool separate_pool = a.layout.kind == LayoutKind::kSglangPool;
      char* base = separate_pool ? t : t + layer * s.layer + kv * s.kv;
      plan->base[i][kv] = base;
      bits |= reinterpret_cast<uintptr_t>(base);
    }
  }
  plan->block_ids = a.block_ids + a.skip_blocks;
  plan->block_stride = s.block;
  plan->token_stride = s.token;
  plan->head_stride = s.head;
  plan->num_blocks = a.layout.num_blocks;
  return bits | static_cast<uint64_t>(s.block);
}

// Fills the segment geometry and work split; `bits` collects every byte offset the
// kernel adds so the vector width divides all of them.
Status FillSplit(const PagedCopyArgs& a, uint64_t bits, int32_t device_ctas, CopyPlan* p) {
  const PagedLayout& l = a.layout;
  p->contiguous = l.block_contiguous() ? 1 : 0;
  p->seg_heads = p->contiguous ? 1 : l.kv_heads;
  bits |= static_cast<uint64_t>(p->row_bytes) | static_cast<uint64_t>(p->chunk_kv_bytes);
  if (!p->contiguous) {
    bits |= static_cast<uint64_t>(p->head_bytes) | static_cast<uint64_t>(p->token_stride) |
            static_cast<uint64_t>(p->head_stride);
  }
  p->vec_bytes = VecBytesFor(bits);
  p->row_vecs = p->head_bytes / p->vec_bytes;
  p->row_shift = -1;
  for (int32_t s = 0; s < 31; ++s) {
    if ((int32_t{1} << s) == p->row_vecs) p->row_shift = s;
  }
  const int64_t seg_vecs =
      int64_t{l.block_size} * (p->contiguous ? p->row_bytes : p->head_bytes) / p->vec_bytes;
  if (seg_vecs > (int64_t{1} << 30)) {
    return Status::Invalid("one block of one layer is more than 2^30 vectors");
  }
  p->team_threads = std::clamp(NextPow2((seg_vecs + kUnroll - 1) / kUnroll), 32, kCtaThreads);
  p->teams_per_cta = kCtaThreads / p->team_threads;
  p->tile_vecs = p->team_threads * kUnroll;
  p->tiles_per_seg = static_cast<int32_t>((seg_vecs + p->tile_vecs - 1) / p->tile_vecs);
  p->num_items =
      int64_t{p->layers} * p->kv_count * p->blocks_used * p->seg_heads * p->tiles_per_seg;
  if (p->num_items >= (int64_t{1} << 31)) {
    return Status::Invalid("transfer of 2^31 or more work items; split it into smaller calls");
  }
  const int64_t needed = (p->num_items + p->teams_per_cta - 1) / p->teams_per_cta;
  const int64_t cap = a.max_ctas > 0 ? a.max_ctas : std::max<int32_t>(device_ctas, 1);
  p->grid = static_cast<int32_t>(std::min(needed, cap));
  return Status::Ok();
}

template <typename V>
void EmulatePlan(const CopyPlan& p) {
  for (int32_t cta = 0; cta < p.grid; ++cta) {
    for (int32_t t = 0; t < kCtaThreads; ++t) {
      const int32_t team = t / p.team_threads, lane = t % p.team_threads;
      const uint32_t stride = static_cast<uint32_t>(p.grid) * p.teams_per_cta;
      for (uint32_t w = static_cast<uint32_t>(cta * p.teams_per_cta + team);
           w < static_cast<uint32_t>(p.num_items); w += stride) {
        CopyItemLane<V>(p, w, lane);
      }
    }
  }
}

template <int N>
struct alignas(N) HostVec {
  unsigned char b[N];
};

}  // namespace

Status MakePlans(const PagedCopyArgs& a, int32_t device_ctas, CopyPlan* plans, int32_t* num_plans) {
  const PagedLayout& l = a.layout;
  *num_plans = 0;
  for (int32_t done = 0; done < a.layers(); done += kMaxLaunchLayers) {
    CopyPlan& p = plans[(*num_plans)++];
    p = CopyPlan{};
    p.layers = std::min(kMaxLaunchLayers, a.layers() - done);
    uint64_t bits = FillBases(a, a.layer_begin + done, p.layers, &p);
    p.chunk = static_cast<char*>(a.chunk) + ChunkLayerOffset(l, a.num_tokens, done);
    bits |= reinterpret_cast<uintptr_t>(p.chunk);
    p.row_bytes = static_cast<int32_t>(l.row_bytes());
    p.head_bytes = l.head_dim * l.elem_bytes;
    p.chunk_kv_bytes = int64_t{a.num_tokens} * p.row_bytes;
    p.num_tokens = a.num_tokens;
    p.block_size = l.block_size;
    p.kv_count = l.kv_count();
    p.blocks_used = a.blocks_used();
    p.gather = a.direction == CopyDirection::kGather ? 1 : 0;
    if (l.row_bytes() > (int64_t{1} << 30)) return Status::Invalid("row_bytes exceeds 2^30");
    Status s = FillSplit(a, bits, device_ctas, &p);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status EmulateOnHost(const PagedCopyArgs& args, int32_t device_ctas) {
  Status s = CanImplement(args);
  if (!s.ok()) return s;
  std::vector<CopyPlan> plans((args.layers() + kMaxLaunchLayers - 1) / kMaxLaunchLayers);
  int32_t n = 0;
  s = MakePlans(args, device_ctas, plans.data(), &n);
  for (int32_t i = 0; s.ok() && i < n; ++i) {
    switch (plans[i].vec_bytes) {
      case 16:
        EmulatePlan<HostVec<16>>(plans[i]);
        break;
      case 8:
        EmulatePlan<HostVec<8>>(plans[i]);
        break;
      case 4:
        EmulatePlan<HostVec<4>>(plans[i]);
        break;
      case 2:
        EmulatePlan<HostVec<2>>(plans[i]);
        break;
      default:
        EmulatePlan<HostVec<1>>(plans[i]);
        break;
    }
  }
  return s;
}

}  // namespace kvstash::paged::internal
