#include "kvstash/paged/reference.h"

#include <algorithm>
#include <cstring>

namespace kvstash::paged {

int64_t PagedElementIndex(const PagedLayout& l, int32_t layer, int32_t kv, int64_t block,
                          int32_t token, int32_t head) {
  const int64_t nb = l.num_blocks, bs = l.block_size, h = l.kv_heads, d = l.head_dim;
  const int64_t b = block, t = token;
  switch (l.kind) {
    case LayoutKind::kVllmNhd:  // [2, nb, bs, h, d]
      return (((kv * nb + b) * bs + t) * h + head) * d;
    case LayoutKind::kVllmHnd:  // [2, nb, h, bs, d]
      return (((kv * nb + b) * h + head) * bs + t) * d;
    case LayoutKind::kFlashInferNhd:  // [nb, 2, bs, h, d]
      return (((b * 2 + kv) * bs + t) * h + head) * d;
    case LayoutKind::kFlashInferHnd:  // [nb, 2, h, bs, d]
      return (((b * 2 + kv) * h + head) * bs + t) * d;
    case LayoutKind::kMla:  // [nb, bs, d]
      return (b * bs + t) * d;
    case LayoutKind::kCrossLayer:  // [nb, layers, 2, bs, h, d]
      return ((((b * l.num_layers + layer) * 2 + kv) * bs + t) * h + head) * d;
    case LayoutKind::kSglangPool:  // [nb * bs, h, d], K and V in separate pools
      return ((b * bs + t) * h + head) * d;
    case LayoutKind::kVllmView:  // [nb, h, bs, 2 * d] at byte strides; V after K
    case LayoutKind::kVllmMlaView:
      return (b * l.view_block_stride + head * l.view_head_stride + t * l.view_token_stride) /
                 l.elem_bytes +
             kv * d;
  }
  return 0;
}

int64_t ChunkElementIndex(const PagedLayout& l, int32_t layer, int32_t kv, int32_t tokens,
                          int32_t token, int32_t head) {
  // [layers][kv_count][tokens][kv_heads][head_dim]
  return ((((int64_t{layer} * l.kv_count()) + kv) * tokens + token) * l.kv_heads + head) *
         l.head_dim;
}

void* PagedTensorOf(const PagedCopyArgs& args, int32_t layer, int32_t kv) {
  switch (args.layout.kind) {
    case LayoutKind::kCrossLayer:
      return args.layer_ptrs[0];
    case LayoutKind::kSglangPool:
      return kv == 0 ? args.layer_ptrs[layer] : args.v_layer_ptrs[layer];
    default:
      return args.layer_ptrs[layer];
  }
}

namespace {

// Copies `tokens` tokens of one (layer, kv) starting at `token`, all in the same block:
// one run when the layout keeps a block's tokens contiguous, else head by head.
void CopyTokens(const PagedCopyArgs& a, int32_t layer, int32_t kv, int32_t token, int32_t tokens) {
  const PagedLayout& l = a.layout;
  const int64_t e = l.elem_bytes;
  const int32_t block = a.block_ids[a.skip_blocks + token / l.block_size];
  auto* paged = static_cast<uint8_t*>(PagedTensorOf(a, layer, kv));
  auto* chunk = static_cast<uint8_t*>(a.chunk);
  const int32_t chunk_layer = layer - a.layer_begin;
  const bool runs = l.block_contiguous();
  for (int32_t t = token; t < token + (runs ? 1 : tokens); ++t) {
    const int32_t slot = t % l.block_size;
    for (int32_t h = 0; h < (runs ? 1 : l.kv_heads); ++h) {
      const int64_t bytes = runs ? tokens * l.row_bytes() : int64_t{l.head_dim} * e;
      uint8_t* p = paged + PagedElementIndex(l, layer, kv, block, slot, h) * e;
      uint8_t* c = chunk + ChunkElementIndex(l, chunk_layer, kv, a.num_tokens, t, h) * e;
      if (a.direction == CopyDirection::kGather) {
        std::memcpy(c, p, bytes);
      } else {
        std::memcpy(p, c, bytes);
      }
    }
  }
}

}  // namespace

Status ReferenceCopy(const PagedCopyArgs& args) {
  Status s = CanImplement(args);
  if (!s.ok()) return s;
  s = ValidateBlockIds(args.layout, args.block_ids + args.skip_blocks, args.blocks_used());
  if (!s.ok()) return s;
  for (int32_t layer = args.layer_begin; layer < args.layer_begin + args.layers(); ++layer) {
    for (int32_t kv = 0; kv < args.layout.kv_count(); ++kv) {
      for (int32_t token = 0; token < args.num_tokens; token += args.layout.block_size) {
        const int32_t left = args.num_tokens - token;
        CopyTokens(args, layer, kv, token, std::min(left, args.layout.block_size));
      }
    }
  }
  return Status::Ok();
}

}  // namespace kvstash::paged
