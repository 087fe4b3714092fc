#include "tests/paged_test_util.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace kvstash::paged::testing {

PagedLayout TestShape::Layout() const {
  PagedLayout l;
  l.kind = kind;
  l.num_layers = layers;
  l.num_blocks = blocks;
  l.block_size = block_size;
  l.kv_heads = l.kv_count() == 1 ? 1 : heads;
  l.head_dim = head_dim;
  l.elem_bytes = elem_bytes;
  if (l.is_view()) {
    // The strides vLLM's compute_layout_strides gives one layer's view of a whole cache.
    const int64_t extent[5] = {layers, blocks, l.kv_heads, block_size,
                               int64_t{l.kv_count()} * head_dim * elem_bytes};
    int64_t stride[5] = {}, run = 1;
    for (int i = 4; i >= 0; --i) {
      stride[kViewOrders[order][i]] = run;
      run *= extent[kViewOrders[order][i]];
    }
    l.view_block_stride = stride[1];
    l.view_head_stride = stride[2];
    l.view_token_stride = stride[3];
  }
  return l;
}

std::string TestShape::Name() const {
  const PagedLayout l = Layout();
  const std::string order_name = l.is_view() ? std::string("_") + kViewOrderNames[order] : "";
  return std::string(LayoutKindName(kind)) + order_name + "/L" + std::to_string(l.num_layers) +
         "_NB" + std::to_string(l.num_blocks) + "_BS" + std::to_string(l.block_size) + "_H" +
         std::to_string(l.kv_heads) + "_D" + std::to_string(l.head_dim) + "_E" +
         std::to_string(l.elem_bytes);
}

TestShape WithKind(TestShape s, LayoutKind kind) {
  s.kind = kind;
  if (PagedLayout{kind}.kv_count() == 1) s.heads = 1;
  return s;
}

std::vector<TestShape> AllShapes() {
  const LayoutKind kinds[] = {LayoutKind::kVllmNhd,       LayoutKind::kVllmHnd,
                              LayoutKind::kFlashInferNhd, LayoutKind::kFlashInferHnd,
                              LayoutKind::kMla,           LayoutKind::kCrossLayer,
                              LayoutKind::kSglangPool};
  // {layers, blocks, block_size, heads, head_dim}
  const int32_t geometries[][5] = {{2, 8, 16, 2, 64}, {3, 6, 3, 3, 7}, {1, 5, 5, 2, 33}};
  std::vector<TestShape> out;
  for (LayoutKind kind : kinds) {
    for (int32_t elem : {1, 2, 4}) {
      for (const auto& g : geometries) {
        out.push_back(WithKind({kind, g[0], g[1], g[2], g[3], g[4], elem}, kind));
      }
      if (kind == LayoutKind::kSglangPool) out.push_back({kind, 2, 40, 1, 2, 16, elem});
      if (kind == LayoutKind::kMla) out.push_back({kind, 2, 4, 4, 1, 576, elem});
    }
  }
  // The views in every KVCacheLayout; odd shapes and the other element sizes in two.
  for (LayoutKind kind : {LayoutKind::kVllmView, LayoutKind::kVllmMlaView}) {
    for (int32_t order = 0; order < 6; ++order) {
      TestShape s = WithKind({kind, 3, 6, 16, 2, 64, 2}, kind);
      s.order = order;
      out.push_back(s);
      if (order == 1 || order == 4) {
        for (int32_t elem : {1, 4}) {
          TestShape odd = WithKind({kind, 2, 5, 3, 3, 7, elem}, kind);
          odd.order = order;
          out.push_back(odd);
        }
      }
    }
  }
  return out;
}

HostCache::HostCache(const PagedLayout& layout) : layout_(layout) {
  const bool cross = layout.kind == LayoutKind::kCrossLayer;
  const bool sglang = layout.kind == LayoutKind::kSglangPool;
  const size_t k = cross ? 1 : static_cast<size_t>(layout.num_layers);
  const size_t bytes = static_cast<size_t>(LayerTensorBytes(layout));
  tensors_.assign(k + (sglang ? k : 0), std::vector<uint8_t>(bytes));
  for (size_t i = 0; i < k; ++i) ptrs_.push_back(tensors_[i].data());
  if (sglang) {
    for (size_t i = 0; i < k; ++i) v_ptrs_.push_back(tensors_[k + i].data());
  }
}

void HostCache::FillRandom(std::mt19937_64& rng) {
  for (auto& t : tensors_) {
    const std::vector<uint8_t> r = RandomBytes(rng, t.size());
    std::copy(r.begin(), r.end(), t.begin());
  }
}

void HostCache::Fill(uint8_t byte) {
  for (auto& t : tensors_) std::fill(t.begin(), t.end(), byte);
}

std::vector<int32_t> RandomBlockIds(std::mt19937_64& rng, int32_t num_blocks, int32_t count) {
  std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(static_cast<size_t>(std::min(count, num_blocks)));
  return ids;
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> out(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t r = rng();
    std::memcpy(out.data() + i, &r, 8);
  }
  for (; i < n; ++i) out[i] = static_cast<uint8_t>(rng());
  return out;
}

PagedCopyArgs ArgsFor(const PagedLayout& layout, void* const* layer_ptrs, void* const* v_layer_ptrs,
                      CopyDirection direction, const std::vector<int32_t>& ids, int32_t skip,
                      int32_t tokens, void* chunk) {
  PagedCopyArgs a;
  a.layout = layout;
  a.direction = direction;
  a.layer_ptrs = layer_ptrs;
  a.v_layer_ptrs = v_layer_ptrs;
  a.block_ids = ids.data();
  a.num_block_ids = static_cast<int32_t>(ids.size());
  a.skip_blocks = skip;
  a.num_tokens = tokens;
  a.chunk = chunk;
  return a;
}

PagedCopyArgs ArgsFor(const HostCache& cache, CopyDirection direction,
                      const std::vector<int32_t>& ids, int32_t skip, int32_t tokens, void* chunk) {
  return ArgsFor(cache.layout(), cache.layer_ptrs(), cache.v_layer_ptrs(), direction, ids, skip,
                 tokens, chunk);
}

int32_t PartialTokens(int32_t block_size, int32_t blocks) {
  return (blocks - 1) * block_size + block_size / 2 + 1;
}

int64_t FirstDiff(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size) {
  if (a_size != b_size) return 0;
  for (size_t i = 0; i < a_size; ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

int64_t FirstDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  return FirstDiff(a.data(), a.size(), b.data(), b.size());
}

}  // namespace kvstash::paged::testing
