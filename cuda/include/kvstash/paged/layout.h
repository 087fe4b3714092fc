// Paged engine KV caches and the canonical chunk layout (docs/chunk-format.md).
//
// An engine keeps its KV cache in fixed-size blocks of `block_size` tokens, addressed by a
// block table; kvstash stores contiguous chunks in one canonical layout,
// "kvstash.layer_kv_token.v1":
//
//   chunk  // [layers][kv][tokens][kv_heads * head_dim] elements, kv = 2 (K, V) or 1 (MLA)
//
// so a chunk written from one engine layout can be read into any other layout of the same
// model. PagedCopyArgs describes one transfer between the two: gather (paged -> chunk) or
// scatter (chunk -> paged). The CPU reference (reference.h) and the GPU op (gpu_copy.h)
// take the same arguments.
//
// This header is plain C++17 with no CUDA or absl dependency, so the standalone cuda/
// project builds on a host with only the CUDA toolkit.
//
// Thread-safety: every type here is a plain value; the functions are pure.
#pragma once

#include <cstdint>
#include <string>

namespace kvstash::paged {

// Engine cache layouts. Shapes are per layer unless said; `2` is the K|V axis.
enum class LayoutKind : int32_t {
  // vLLM FlashAttention:   [2, num_blocks, block_size, kv_heads, head_dim]
  kVllmNhd = 0,
  // vLLM HND variant:      [2, num_blocks, kv_heads, block_size, head_dim]
  kVllmHnd = 1,
  // FlashInfer NHD:        [num_blocks, 2, block_size, kv_heads, head_dim]
  kFlashInferNhd = 2,
  // FlashInfer HND:        [num_blocks, 2, kv_heads, block_size, head_dim]
  kFlashInferHnd = 3,
  // MLA latent cache:      [num_blocks, block_size, head_dim]  (kv_heads must be 1; no K/V)
  kMla = 4,
  // Cross-layer, one tensor for the whole model:
  //                        [num_blocks, num_layers, 2, block_size, kv_heads, head_dim]
  kCrossLayer = 5,
  // SGLang token pool, separate K and V tensors per layer: [pool_tokens, kv_heads, head_dim]
  // with pool_tokens = num_blocks * block_size; a "block" is a page of block_size tokens
  // (page_size 1 is the common case).
  kSglangPool = 6,
  // vLLM 0.32 per-layer view, any KVCacheLayout: [num_blocks, kv_heads, block_size, 2 *
  // head_dim] with K then V side by side in the last axis, the first three axes at the byte
  // strides PagedLayout::view_*_stride give (torch's stride() times elem_bytes); the last
  // axis is contiguous. num_blocks counts the view's (kernel) blocks.
  kVllmView = 7,
  // vLLM 0.32 MLA view: [num_blocks, 1, block_size, head_dim] (the latent), strides as above.
  kVllmMlaView = 8,
};

const char* LayoutKindName(LayoutKind kind);
// Parses the names LayoutKindName returns ("vllm_nhd", ...). False when unknown.
bool ParseLayoutKind(const std::string& name, LayoutKind* kind);

// The shape of an engine's whole paged cache.
struct PagedLayout {
  LayoutKind kind = LayoutKind::kVllmNhd;
  int32_t num_layers = 0;
  // Blocks per layer (SGLang: pool pages). Block ids must be in [0, num_blocks).
  int32_t num_blocks = 0;
  int32_t block_size = 16;  // tokens per block (SGLang: page size)
  int32_t kv_heads = 0;     // 1 for kMla
  int32_t head_dim = 0;     // elements; kMla: the latent width, e.g. 576
  int32_t elem_bytes = 2;   // 1 (fp8), 2 (fp16/bf16) or 4 (fp32)
  // kVllmView and kVllmMlaView only: byte strides of the view's block, head and token axes.
  int64_t view_block_stride = 0;
  int64_t view_head_stride = 0;
  int64_t view_token_stride = 0;

  bool is_view() const { return kind == LayoutKind::kVllmView || kind == LayoutKind::kVllmMlaView; }
  // 1 for the MLA kinds, else 2.
  int32_t kv_count() const {
    return kind == LayoutKind::kMla || kind == LayoutKind::kVllmMlaView ? 1 : 2;
  }
  // Bytes of one token's row in a chunk: kv_heads * head_dim * elem_bytes.
  int64_t row_bytes() const { return int64_t{kv_heads} * head_dim * elem_bytes; }
  // Whether a block's tokens are one contiguous run per (layer, K|V) (every kind but HND
  // and the views, which are copied row by row).
  bool block_contiguous() const {
    return kind != LayoutKind::kVllmHnd && kind != LayoutKind::kFlashInferHnd && !is_view();
  }
};

// Byte strides of one layout: the element (layer, kv, block, token, head, 0) lies at
//   LayerKvBaseOffset(l, kv) + block * block + token * token + head * head
// from the tensor pointer of its layer (kCrossLayer: of the whole cache; kSglangPool: of
// the layer's K or V pool, LayerKvBaseOffset is then 0).
struct LayoutStrides {
  int64_t block = 0;
  int64_t token = 0;
  int64_t head = 0;
  int64_t kv = 0;     // added for V (0 for kSglangPool and the MLA kinds)
  int64_t layer = 0;  // added per layer (kCrossLayer only)
};
LayoutStrides StridesOf(const PagedLayout& layout);

// Bytes of one layer's tensor (kCrossLayer: of the whole cache; kSglangPool: of one pool;
// the views: from the first byte to the last they address).
int64_t LayerTensorBytes(const PagedLayout& layout);

enum class CopyDirection : int32_t {
  kGather = 0,   // paged cache -> chunk
  kScatter = 1,  // chunk -> paged cache
};

// One transfer between a paged cache and one chunk buffer. The tokens copied are tokens
// [0, num_tokens) of the sequence formed by blocks block_ids[skip_blocks], ...; only the
// last block may be partial. Layers [layer_begin, layer_begin + layer_count) are copied,
// and `chunk` holds exactly those layers:
//   chunk  // [layer_count][kv_count][num_tokens][kv_heads * head_dim]
struct PagedCopyArgs {
  PagedLayout layout;
  CopyDirection direction = CopyDirection::kGather;
  // Host array of the paged tensors' pointers, one per layer of the model (kCrossLayer:
  // one entry, the whole cache). kSglangPool: the K pools. The pointers are device
  // addresses for the GPU op and host addresses for the CPU reference.
  void* const* layer_ptrs = nullptr;
  // kSglangPool only: the V pools, one per layer. Must be null for other kinds.
  void* const* v_layer_ptrs = nullptr;
  // [num_block_ids] block table. The GPU op reads it on the device (device, managed or
  // mapped pinned host memory); the CPU reference reads it on the host.
  const int32_t* block_ids = nullptr;
  int32_t num_block_ids = 0;
  // Leading entries of block_ids to skip (blocks already cached by the engine).
  int32_t skip_blocks = 0;
  // Tokens to copy; needs ceil(num_tokens / block_size) <= num_block_ids - skip_blocks.
  int32_t num_tokens = 0;
  // Layer range; layer_count -1 means every layer from layer_begin on.
  int32_t layer_begin = 0;
  int32_t layer_count = -1;
  // The chunk buffer (see above). GPU op: device memory or pinned host memory mapped into
  // the device (zero-copy).
  void* chunk = nullptr;
  // Cap on the CTAs of a GPU launch (0: as many as fill the device). A small cap leaves
  // the other SMs to the engine's forward pass; each CTA then loops over more work.
  int32_t max_ctas = 0;

  // Layers this transfer copies (resolves layer_count -1).
  int32_t layers() const { return layer_count < 0 ? layout.num_layers - layer_begin : layer_count; }
  // Blocks this transfer touches: ceil(num_tokens / block_size).
  int32_t blocks_used() const {
    return layout.block_size > 0 ? (num_tokens + layout.block_size - 1) / layout.block_size : 0;
  }
};

// Result of a paged operation. The cuda/ core stays free of absl; the client maps this to
// absl::Status.
enum class StatusCode : int32_t {
  kOk = 0,
  kInvalidArgument = 1,  // arguments a paged op cannot implement (message names the field)
  kUnavailable = 2,      // no usable CUDA device
  kInternal = 3,         // a CUDA call or launch failed (message holds the CUDA error)
};

struct Status {
  StatusCode code = StatusCode::kOk;
  std::string message;

  bool ok() const { return code == StatusCode::kOk; }
  static Status Ok() { return {}; }
  static Status Invalid(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  std::string ToString() const;
};

// Checks everything that can be checked without reading device memory: shape ranges,
// element size, layer range, pointers non-null, enough block ids, layout/pointer-kind
// match. Block id values are not read (see ValidateBlockIds).
Status CanImplement(const PagedCopyArgs& args);

// Checks that the `count` host-visible block ids lie in [0, num_blocks).
Status ValidateBlockIds(const PagedLayout& layout, const int32_t* ids, int32_t count);

// Bytes of a chunk of `tokens` tokens holding `layers` layers:
//   layers * kv_count * tokens * row_bytes.
int64_t ChunkBytes(const PagedLayout& layout, int32_t tokens, int32_t layers);
// Offset of layer `layer` (0-based within the chunk) in a chunk of `tokens` tokens.
int64_t ChunkLayerOffset(const PagedLayout& layout, int32_t tokens, int32_t layer);

}  // namespace kvstash::paged
