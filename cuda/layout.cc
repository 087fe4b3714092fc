#include "kvstash/paged/layout.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace kvstash::paged {
namespace {

struct KindName {
  LayoutKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {
    {LayoutKind::kVllmNhd, "vllm_nhd"},
    {LayoutKind::kVllmHnd, "vllm_hnd"},
    {LayoutKind::kFlashInferNhd, "flashinfer_nhd"},
    {LayoutKind::kFlashInferHnd, "flashinfer_hnd"},
    {LayoutKind::kMla, "mla"},
    {LayoutKind::kCrossLayer, "cross_layer"},
    {LayoutKind::kSglangPool, "sglang_pool"},
    {LayoutKind::kVllmView, "vllm_view"},
    {LayoutKind::kVllmMlaView, "vllm_mla_view"},
};

// Upper bound of every shape field: keeps all byte math far from int64 overflow.
constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr int64_t kMaxTensorBytes = int64_t{1} << 50;

// A view's cells (block, head, token: kv_count * head_dim elements each) must not overlap:
// ordered by stride, each axis must step over everything the axes inside it span.
Status CheckViewStrides(const PagedLayout& l) {
  struct Axis {
    const char* name;
    int64_t stride, extent;
  } axes[] = {{"view_block_stride", l.view_block_stride, l.num_blocks},
              {"view_head_stride", l.view_head_stride, l.kv_heads},
              {"view_token_stride", l.view_token_stride, l.block_size}};
  for (const Axis& a : axes) {
    if (a.stride < 1 || a.stride > kMaxTensorBytes || a.stride % l.elem_bytes != 0) {
      return Status::Invalid(std::string("layout.") + a.name + " must be a positive multiple " +
                             "of elem_bytes below 2^50, got " + std::to_string(a.stride));
    }
  }
  std::sort(std::begin(axes), std::end(axes),
            [](const Axis& a, const Axis& b) { return a.stride < b.stride; });
  int64_t span = int64_t{l.kv_count()} * l.head_dim * l.elem_bytes;  // one cell
  for (const Axis& a : axes) {
    if (a.extent > 1 && a.stride < span) {
      return Status::Invalid(std::string("layout.") + a.name + " " + std::to_string(a.stride) +
                             " overlaps the " + std::to_string(span) + " bytes inside it");
    }
    span = std::max(span, a.stride * a.extent);
    if (span > kMaxTensorBytes) return Status::Invalid("layout is larger than 2^50 bytes");
  }
  return Status::Ok();
}

Status CheckShape(const PagedLayout& l) {
  const struct {
    const char* name;
    int64_t value;
  } dims[] = {{"num_layers", l.num_layers},
              {"num_blocks", l.num_blocks},
              {"block_size", l.block_size},
              {"kv_heads", l.kv_heads},
              {"head_dim", l.head_dim}};
  for (const auto& d : dims) {
    if (d.value < 1 || d.value > kMaxDim) {
      return Status::Invalid(std::string("layout.") + d.name + " must be in [1, 2^24], got " +
                             std::to_string(d.value));
    }
  }
  if (l.elem_bytes != 1 && l.elem_bytes != 2 && l.elem_bytes != 4) {
    return Status::Invalid("layout.elem_bytes must be 1, 2 or 4, got " +
                           std::to_string(l.elem_bytes));
  }
  if (l.kv_count() == 1 && l.kv_heads != 1) {
    return Status::Invalid(std::string("layout.kv_heads must be 1 for ") + LayoutKindName(l.kind));
  }
  if (LayoutKindName(l.kind)[0] == '?') return Status::Invalid("layout.kind is unknown");
  const int64_t per_block = int64_t{l.block_size} * l.row_bytes() * 2;
  if (per_block > kMaxTensorBytes / l.num_blocks ||
      per_block * l.num_blocks > kMaxTensorBytes / l.num_layers) {
    return Status::Invalid("layout is larger than 2^50 bytes");
  }
  return l.is_view() ? CheckViewStrides(l) : Status::Ok();
}

Status CheckPointers(const PagedCopyArgs& a) {
  if (a.layer_ptrs == nullptr) return Status::Invalid("layer_ptrs is null");
  const bool sglang = a.layout.kind == LayoutKind::kSglangPool;
  if (sglang != (a.v_layer_ptrs != nullptr)) {
    return Status::Invalid("v_layer_ptrs must be set for sglang_pool and only for it");
  }
  if (a.layout.kind == LayoutKind::kCrossLayer) {
    return a.layer_ptrs[0] ? Status::Ok() : Status::Invalid("layer_ptrs[0] is null");
  }
  for (int32_t l = a.layer_begin; l < a.layer_begin + a.layers(); ++l) {
    if (a.layer_ptrs[l] == nullptr || (sglang && a.v_layer_ptrs[l] == nullptr)) {
      return Status::Invalid("layer pointer of layer " + std::to_string(l) + " is null");
    }
  }
  return Status::Ok();
}

Status CheckRange(const PagedCopyArgs& a) {
  if (a.direction != CopyDirection::kGather && a.direction != CopyDirection::kScatter) {
    return Status::Invalid("direction is unknown");
  }
  if (a.layer_begin < 0 || a.layer_begin >= a.layout.num_layers || a.layers() < 1 ||
      a.layers() > a.layout.num_layers - a.layer_begin) {
    return Status::Invalid("layer range [" + std::to_string(a.layer_begin) + ", +" +
                           std::to_string(a.layers()) + ") is outside the model's " +
                           std::to_string(a.layout.num_layers) + " layers");
  }
  if (a.num_tokens < 1) return Status::Invalid("num_tokens must be >= 1");
  if (a.block_ids == nullptr) return Status::Invalid("block_ids is null");
  if (a.skip_blocks < 0 || a.skip_blocks > a.num_block_ids) {
    return Status::Invalid("skip_blocks must be in [0, num_block_ids]");
  }
  if (a.blocks_used() > a.num_block_ids - a.skip_blocks) {
    return Status::Invalid(std::to_string(a.num_tokens) + " tokens need " +
                           std::to_string(a.blocks_used()) + " blocks, only " +
                           std::to_string(a.num_block_ids - a.skip_blocks) + " given");
  }
  if (a.chunk == nullptr) return Status::Invalid("chunk is null");
  if (a.max_ctas < 0) return Status::Invalid("max_ctas must be >= 0");
  return Status::Ok();
}

}  // namespace

const char* LayoutKindName(LayoutKind kind) {
  for (const KindName& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

bool ParseLayoutKind(const std::string& name, LayoutKind* kind) {
  for (const KindName& k : kKindNames) {
    if (name == k.name) {
      *kind = k.kind;
      return true;
    }
  }
  return false;
}

LayoutStrides StridesOf(const PagedLayout& l) {
  const int64_t e = l.elem_bytes, d = l.head_dim, h = l.kv_heads, bs = l.block_size;
  const int64_t row = h * d * e, block_span = bs * row;  // one block of K (or V)
  LayoutStrides s;
  s.token = row;
  s.head = d * e;
  switch (l.kind) {
    case LayoutKind::kVllmNhd:
      s.block = block_span;
      s.kv = l.num_blocks * block_span;
      break;
    case LayoutKind::kVllmHnd:
      s = {block_span, d * e, bs * d * e, l.num_blocks * block_span, 0};
      break;
    case LayoutKind::kFlashInferNhd:
      s.block = 2 * block_span;
      s.kv = block_span;
      break;
    case LayoutKind::kFlashInferHnd:
      s = {2 * block_span, d * e, bs * d * e, block_span, 0};
      break;
    case LayoutKind::kMla:
    case LayoutKind::kSglangPool:
      s.block = block_span;
      break;
    case LayoutKind::kCrossLayer:
      s.block = int64_t{l.num_layers} * 2 * block_span;
      s.kv = block_span;
      s.layer = 2 * block_span;
      break;
    case LayoutKind::kVllmView:
    case LayoutKind::kVllmMlaView:
      s = {l.view_block_stride, l.view_token_stride, l.view_head_stride,
           l.kind == LayoutKind::kVllmView ? d * e : 0, 0};
      break;
  }
  return s;
}

int64_t LayerTensorBytes(const PagedLayout& l) {
  const int64_t blocks = int64_t{l.num_blocks} * l.block_size * l.row_bytes();
  switch (l.kind) {
    case LayoutKind::kMla:
    case LayoutKind::kSglangPool:
      return blocks;
    case LayoutKind::kCrossLayer:
      return blocks * 2 * l.num_layers;
    case LayoutKind::kVllmView:
    case LayoutKind::kVllmMlaView:
      return (l.num_blocks - int64_t{1}) * l.view_block_stride +
             (l.kv_heads - int64_t{1}) * l.view_head_stride +
             (l.block_size - int64_t{1}) * l.view_token_stride +
             int64_t{l.kv_count()} * l.head_dim * l.elem_bytes;
    default:
      return blocks * 2;
  }
}

std::string Status::ToString() const {
  static const char* const kNames[] = {"OK", "INVALID_ARGUMENT", "UNAVAILABLE", "INTERNAL"};
  const int i = static_cast<int>(code);
  std::string s = (i >= 0 && i < 4) ? kNames[i] : "UNKNOWN";
  return message.empty() ? s : s + ": " + message;
}

Status CanImplement(const PagedCopyArgs& args) {
  Status s = CheckShape(args.layout);
  if (s.ok()) s = CheckRange(args);
  if (s.ok()) s = CheckPointers(args);
  return s;
}

Status ValidateBlockIds(const PagedLayout& layout, const int32_t* ids, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= layout.num_blocks) {
      return Status::Invalid("block_ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                             " is outside [0, " + std::to_string(layout.num_blocks) + ")");
    }
  }
  return Status::Ok();
}

int64_t ChunkBytes(const PagedLayout& layout, int32_t tokens, int32_t layers) {
  return int64_t{layers} * layout.kv_count() * tokens * layout.row_bytes();
}

int64_t ChunkLayerOffset(const PagedLayout& layout, int32_t tokens, int32_t layer) {
  return ChunkBytes(layout, tokens, layer);
}

}  // namespace kvstash::paged
