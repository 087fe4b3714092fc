// Fixtures for paged copy tests (CPU and GPU): shapes covering every layout and element
// size, host paged caches with random contents, block tables, byte comparisons. No test
// framework here, so both the GoogleTest and the minitest binaries link it.
//
// Thread-safety: HostCache is a plain owning value, used by one thread at a time.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kvstash/paged/layout.h"

namespace kvstash::paged::testing {

struct TestShape {
  LayoutKind kind = LayoutKind::kVllmNhd;
  int32_t layers = 2, blocks = 8, block_size = 16, heads = 2, head_dim = 64, elem_bytes = 2;
  // The view kinds: which of vLLM 0.32's KVCacheLayouts gives their strides (kViewOrders).
  int32_t order = 0;

  PagedLayout Layout() const;
  std::string Name() const;
};

// vLLM 0.32's KVCacheLayout stride orders over [layer, block, head, token, content], outermost
// first (LBHNC, LBNHC, LHBNC, BLHNC, BLNHC, BHLNC), and their names.
inline constexpr int32_t kViewOrders[6][5] = {{0, 1, 2, 3, 4}, {0, 1, 3, 2, 4}, {0, 2, 1, 3, 4},
                                              {1, 0, 2, 3, 4}, {1, 0, 3, 2, 4}, {1, 2, 0, 3, 4}};
inline constexpr const char* kViewOrderNames[6] = {"LBHNC", "LBNHC", "LHBNC",
                                                   "BLHNC", "BLNHC", "BHLNC"};

// Every LayoutKind x element size 1/2/4 x geometries: aligned (block 16, head_dim 64),
// odd block size and head dim (3 x 7, 5 x 33: narrow vectors), SGLang page size 1, MLA
// width 576, the views in each KVCacheLayout. Small enough for sanitizer builds.
std::vector<TestShape> AllShapes();
// The same shape with a different kind (MLA forces kv_heads 1).
TestShape WithKind(TestShape s, LayoutKind kind);

// A paged cache in host memory: one tensor per layer (kCrossLayer: one for the model),
// plus the V pools of kSglangPool.
class HostCache {
 public:
  explicit HostCache(const PagedLayout& layout);
  HostCache(const HostCache&) = delete;
  HostCache& operator=(const HostCache&) = delete;

  void FillRandom(std::mt19937_64& rng);
  void Fill(uint8_t byte);

  const PagedLayout& layout() const { return layout_; }
  // Every tensor: K (or K|V) tensors first, then the V pools.
  std::vector<std::vector<uint8_t>>& tensors() { return tensors_; }
  const std::vector<std::vector<uint8_t>>& tensors() const { return tensors_; }
  void* const* layer_ptrs() const { return ptrs_.data(); }
  void* const* v_layer_ptrs() const { return v_ptrs_.empty() ? nullptr : v_ptrs_.data(); }
  // Number of K (or K|V) tensors; the V pools follow in tensors().
  size_t k_tensors() const { return ptrs_.size(); }

 private:
  PagedLayout layout_;
  std::vector<std::vector<uint8_t>> tensors_;
  std::vector<void*> ptrs_, v_ptrs_;
};

// `count` distinct block ids in [0, num_blocks), shuffled.
std::vector<int32_t> RandomBlockIds(std::mt19937_64& rng, int32_t num_blocks, int32_t count);
std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n);

// A transfer of `tokens` tokens over `ids` after `skip` blocks, all layers.
PagedCopyArgs ArgsFor(const PagedLayout& layout, void* const* layer_ptrs, void* const* v_layer_ptrs,
                      CopyDirection direction, const std::vector<int32_t>& ids, int32_t skip,
                      int32_t tokens, void* chunk);
PagedCopyArgs ArgsFor(const HostCache& cache, CopyDirection direction,
                      const std::vector<int32_t>& ids, int32_t skip, int32_t tokens, void* chunk);

// A token count that ends in a partial block when the block size allows: all but the
// last of `blocks` blocks full, the last one about half full.
int32_t PartialTokens(int32_t block_size, int32_t blocks);

// Index of the first differing byte, -1 when equal (sizes must match, else 0).
int64_t FirstDiff(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size);
int64_t FirstDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

}  // namespace kvstash::paged::testing
