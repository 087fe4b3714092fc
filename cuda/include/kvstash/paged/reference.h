// CPU reference of every paged copy: the same PagedCopyArgs as the GPU op, every pointer
// a host address. The client uses it on hosts without a GPU (and for caches in host
// memory); the tests check the GPU kernels against it byte for byte.
//
// It is written from the per-layout index formulas of docs/chunk-format.md, independently
// of the stride tables the GPU launch plan uses, so the two check each other.
//
// Thread-safety: the functions are reentrant; concurrent calls must not write the same
// memory.
#pragma once

#include <cstdint>

#include "kvstash/paged/layout.h"

namespace kvstash::paged {

// Element index of (layer, kv, block, token-in-block, head, 0) inside the tensor that
// PagedTensorOf returns, per the formulas in docs/chunk-format.md.
int64_t PagedElementIndex(const PagedLayout& layout, int32_t layer, int32_t kv, int64_t block,
                          int32_t token, int32_t head);

// Element index of (layer-in-chunk, kv, token, head, 0) in a chunk of `tokens` tokens.
int64_t ChunkElementIndex(const PagedLayout& layout, int32_t layer, int32_t kv, int32_t tokens,
                          int32_t token, int32_t head);

// The tensor holding (layer, kv): layer_ptrs[layer], layer_ptrs[0] for kCrossLayer,
// v_layer_ptrs[layer] for the V pool of kSglangPool.
void* PagedTensorOf(const PagedCopyArgs& args, int32_t layer, int32_t kv);

// Runs the copy on the calling thread. Checks CanImplement and every used block id first;
// nothing is written when either fails.
Status ReferenceCopy(const PagedCopyArgs& args);

}  // namespace kvstash::paged
