// CPU tests of the paged copy: the reference against hand-computed indices and its own
// round trips (every layout, element size, odd shapes, partial last block, across
// layouts and block sizes), and the GPU kernel's launch plan emulated on the host against
// the reference, byte for byte.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "copy_plan.h"
#include "kvstash/paged/layout.h"
#include "kvstash/paged/reference.h"
#include "tests/check.h"
#include "tests/paged_test_util.h"

namespace kvstash::paged::testing {
namespace {

constexpr uint8_t kPoison = 0xA5;
constexpr CopyDirection kGather = CopyDirection::kGather;
constexpr CopyDirection kScatter = CopyDirection::kScatter;

// A random cache, a shuffled block table with one skipped entry, a partial last block.
struct Transfer {
  explicit Transfer(const TestShape& shape, uint64_t seed) : rng(seed), cache(shape.Layout()) {
    cache.FillRandom(rng);
    ids = RandomBlockIds(rng, shape.blocks, shape.blocks - 1);
    tokens = PartialTokens(shape.block_size, static_cast<int32_t>(ids.size()) - 1);
    chunk.assign(static_cast<size_t>(ChunkBytes(cache.layout(), tokens, shape.layers)), 0);
  }
  PagedCopyArgs Args(HostCache& c, CopyDirection d, void* out) const {
    return ArgsFor(c, d, ids, 1, tokens, out);
  }

  std::mt19937_64 rng;
  HostCache cache;
  std::vector<int32_t> ids;
  int32_t tokens = 0;
  std::vector<uint8_t> chunk;
};

TEST(PagedLayoutTest, StridesMatchIndexFormulas) {
  for (const TestShape& shape : AllShapes()) {
    const PagedLayout l = shape.Layout();
    const LayoutStrides s = StridesOf(l);
    const bool pool = l.kind == LayoutKind::kSglangPool;
    for (int32_t layer = 0; layer < l.num_layers; ++layer) {
      for (int32_t kv = 0; kv < l.kv_count(); ++kv) {
        for (int32_t b = 0; b < l.num_blocks; b += 2) {
          for (int32_t t = 0; t < l.block_size; ++t) {
            for (int32_t h = 0; h < l.kv_heads; ++h) {
              const int64_t base = pool ? 0 : layer * s.layer + kv * s.kv;
              const int64_t off = base + b * s.block + t * s.token + h * s.head;
              ASSERT_EQ(off, PagedElementIndex(l, layer, kv, b, t, h) * l.elem_bytes)
                  << shape.Name() << " layer " << layer << " kv " << kv << " block " << b;
            }
          }
        }
      }
    }
  }
}

// Layers 2, blocks 3, block size 2, 2 heads, head_dim 2, fp32. Element e of tensor i holds
// i * 1000 + e; block table {2, 0}, 3 tokens.
uint32_t KnownAnswer(LayoutKind kind, int32_t layer, int32_t kv, int32_t token, int32_t head,
                     int32_t d) {
  HostCache cache(TestShape{kind, 2, 3, 2, 2, 2, 4}.Layout());
  for (size_t i = 0; i < cache.tensors().size(); ++i) {
    auto* v = reinterpret_cast<uint32_t*>(cache.tensors()[i].data());
    for (size_t e = 0; e < cache.tensors()[i].size() / 4; ++e) v[e] = uint32_t(i * 1000 + e);
  }
  const std::vector<int32_t> ids = {2, 0};
  const PagedLayout& l = cache.layout();
  std::vector<uint32_t> chunk(static_cast<size_t>(ChunkBytes(l, 3, 2) / 4));
  const Status s = ReferenceCopy(ArgsFor(cache, kGather, ids, 0, 3, chunk.data()));
  if (!s.ok()) return ~0u;
  const int32_t index = (((layer * l.kv_count() + kv) * 3 + token) * l.kv_heads + head) * 2 + d;
  return chunk[static_cast<size_t>(index)];
}

TEST(PagedReferenceTest, KnownAnswers) {
  // (layer 1, V, token 2, head 1, d 1): block 0, slot 0.
  EXPECT_EQ(KnownAnswer(LayoutKind::kVllmNhd, 1, 1, 2, 1, 1), 1027u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kVllmHnd, 1, 1, 2, 1, 1), 1029u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kFlashInferNhd, 1, 1, 2, 1, 1), 1011u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kFlashInferHnd, 1, 1, 2, 1, 1), 1013u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kCrossLayer, 1, 1, 2, 1, 1), 27u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kSglangPool, 1, 1, 2, 1, 1), 3003u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kMla, 1, 0, 2, 0, 1), 1001u);
  // The views in LBHNC: [3 blocks][2 heads][2 tokens][K 2 | V 2] per layer.
  EXPECT_EQ(KnownAnswer(LayoutKind::kVllmView, 1, 1, 2, 1, 1), 1011u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kVllmMlaView, 1, 0, 2, 0, 1), 1001u);
  // (layer 0, K, token 1, head 0, d 0): block 2, slot 1.
  EXPECT_EQ(KnownAnswer(LayoutKind::kVllmNhd, 0, 0, 1, 0, 0), 20u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kVllmHnd, 0, 0, 1, 0, 0), 18u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kFlashInferNhd, 0, 0, 1, 0, 0), 36u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kFlashInferHnd, 0, 0, 1, 0, 0), 34u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kCrossLayer, 0, 0, 1, 0, 0), 68u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kSglangPool, 0, 0, 1, 0, 0), 20u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kMla, 0, 0, 1, 0, 0), 10u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kVllmView, 0, 0, 1, 0, 0), 36u);
  EXPECT_EQ(KnownAnswer(LayoutKind::kVllmMlaView, 0, 0, 1, 0, 0), 10u);
}

TEST(PagedLayoutTest, OverlappingViewStridesAreRefused) {
  TestShape shape{LayoutKind::kVllmView, 2, 4, 8, 2, 16, 2};
  shape.order = 1;  // LBNHC
  PagedLayout l = shape.Layout();
  std::vector<uint8_t> chunk(static_cast<size_t>(ChunkBytes(l, 8, 2)));
  HostCache cache(l);
  const std::vector<int32_t> ids = {1};
  EXPECT_TRUE(CanImplement(ArgsFor(cache, kGather, ids, 0, 8, chunk.data())).ok());
  l.view_head_stride = 32;  // less than one head's K|V cell of 64 bytes
  PagedCopyArgs bad = ArgsFor(cache, kGather, ids, 0, 8, chunk.data());
  bad.layout = l;
  const Status s = CanImplement(bad);
  EXPECT_EQ(s.code, StatusCode::kInvalidArgument);
  EXPECT_NE(s.message.find("view_head_stride 32 overlaps"), std::string::npos) << s.message;
  bad.layout.view_head_stride = 0;
  EXPECT_NE(CanImplement(bad).message.find("positive multiple"), std::string::npos);
}

// Scatters t's chunk into a poisoned cache of `reader`'s shape (enough blocks, a random
// table after `skip` entries) and gathers it back: the bytes must be t's chunk.
void ExpectReadsBack(Transfer& t, TestShape reader, int32_t skip, const std::string& what) {
  reader.blocks = (t.tokens + reader.block_size - 1) / reader.block_size + skip;
  HostCache dst(reader.Layout());
  dst.Fill(kPoison);
  const std::vector<int32_t> ids = RandomBlockIds(t.rng, reader.blocks, reader.blocks);
  std::vector<uint8_t> again(t.chunk.size(), kPoison);
  ASSERT_TRUE(ReferenceCopy(ArgsFor(dst, kScatter, ids, skip, t.tokens, t.chunk.data())).ok());
  ASSERT_TRUE(ReferenceCopy(ArgsFor(dst, kGather, ids, skip, t.tokens, again.data())).ok());
  EXPECT_EQ(FirstDiff(again, t.chunk), -1) << what;
}

TEST(PagedReferenceTest, EveryViewOrderReadsWhatNhdWrote) {
  const TestShape nhd{LayoutKind::kVllmNhd, 3, 6, 16, 2, 64, 2};
  Transfer t(nhd, 19);
  ASSERT_TRUE(ReferenceCopy(t.Args(t.cache, kGather, t.chunk.data())).ok());
  for (int32_t order = 0; order < 6; ++order) {
    // A smaller block, as vLLM's kernel blocks, on the reading side.
    TestShape view = WithKind(nhd, LayoutKind::kVllmView);
    view.order = order;
    view.block_size = 8;
    ExpectReadsBack(t, view, 1, view.Name());
  }
}

// Checks that `got` (poisoned, then scattered into) holds t.cache's transferred tokens
// and poison everywhere else.
void ExpectOnlyTransferredTokens(const Transfer& t, HostCache& got) {
  HostCache want(t.cache.layout());
  want.Fill(kPoison);
  const PagedLayout& l = t.cache.layout();
  // Rows are copied by index here, not with the code under test.
  const PagedCopyArgs a = ArgsFor(t.cache, kGather, t.ids, 1, t.tokens, nullptr);
  const PagedCopyArgs w = ArgsFor(want, kGather, t.ids, 1, t.tokens, nullptr);
  for (int32_t layer = 0; layer < l.num_layers; ++layer) {
    for (int32_t kv = 0; kv < l.kv_count(); ++kv) {
      for (int32_t tok = 0; tok < t.tokens; ++tok) {
        const int32_t b = t.ids[1 + tok / l.block_size], slot = tok % l.block_size;
        for (int32_t h = 0; h < l.kv_heads; ++h) {
          const int64_t off = PagedElementIndex(l, layer, kv, b, slot, h) * l.elem_bytes;
          const auto* from = static_cast<const uint8_t*>(PagedTensorOf(a, layer, kv)) + off;
          auto* to = static_cast<uint8_t*>(PagedTensorOf(w, layer, kv)) + off;
          std::copy(from, from + int64_t{l.head_dim} * l.elem_bytes, to);
        }
      }
    }
  }
  for (size_t i = 0; i < want.tensors().size(); ++i) {
    EXPECT_EQ(FirstDiff(got.tensors()[i], want.tensors()[i]), -1) << "tensor " << i;
  }
}

TEST(PagedReferenceTest, RoundTripEveryShape) {
  for (const TestShape& shape : AllShapes()) {
    Transfer t(shape, 7);
    ASSERT_TRUE(ReferenceCopy(t.Args(t.cache, kGather, t.chunk.data())).ok()) << shape.Name();
    HostCache back(shape.Layout());
    back.Fill(kPoison);
    ASSERT_TRUE(ReferenceCopy(t.Args(back, kScatter, t.chunk.data())).ok()) << shape.Name();
    ExpectOnlyTransferredTokens(t, back);
    std::vector<uint8_t> again(t.chunk.size(), kPoison);
    ASSERT_TRUE(ReferenceCopy(t.Args(back, kGather, again.data())).ok());
    EXPECT_EQ(FirstDiff(again, t.chunk), -1) << shape.Name();
  }
}

TEST(PagedReferenceTest, CrossLayoutAndBlockSizeRoundTrip) {
  const LayoutKind kinds[] = {LayoutKind::kVllmNhd,       LayoutKind::kVllmHnd,
                              LayoutKind::kFlashInferNhd, LayoutKind::kFlashInferHnd,
                              LayoutKind::kCrossLayer,    LayoutKind::kSglangPool};
  for (const TestShape& shape : AllShapes()) {
    if (shape.kind != LayoutKind::kVllmNhd) continue;  // one pass per geometry/elem
    for (LayoutKind from : kinds) {
      Transfer t(WithKind(shape, from), 11);
      ASSERT_TRUE(ReferenceCopy(t.Args(t.cache, kGather, t.chunk.data())).ok());
      for (LayoutKind to : kinds) {
        // A different block size and block table on the reading side.
        TestShape other = WithKind(shape, to);
        other.block_size = shape.block_size == 1 ? 4 : shape.block_size * 2 - 1;
        ExpectReadsBack(t, other, 2, std::string(LayoutKindName(from)) + " -> " + other.Name());
      }
    }
  }
}

TEST(PagedReferenceTest, PerLayerCallsMatchWholeModel) {
  for (const TestShape& shape : AllShapes()) {
    Transfer t(shape, 13);
    ASSERT_TRUE(ReferenceCopy(t.Args(t.cache, kGather, t.chunk.data())).ok());
    std::vector<uint8_t> layered(t.chunk.size(), kPoison);
    HostCache back(shape.Layout());
    back.Fill(kPoison);
    for (int32_t layer = 0; layer < shape.layers; ++layer) {
      const int64_t off = ChunkLayerOffset(t.cache.layout(), t.tokens, layer);
      PagedCopyArgs g = t.Args(t.cache, kGather, layered.data() + off);
      PagedCopyArgs s = t.Args(back, kScatter, t.chunk.data() + off);
      g.layer_begin = s.layer_begin = layer;
      g.layer_count = s.layer_count = 1;
      ASSERT_TRUE(ReferenceCopy(g).ok());
      ASSERT_TRUE(ReferenceCopy(s).ok());
    }
    EXPECT_EQ(FirstDiff(layered, t.chunk), -1) << shape.Name();
    ExpectOnlyTransferredTokens(t, back);
  }
}

// Runs the kernel's plan on the host and the reference on equal poisoned outputs.
void ExpectEmulationMatches(const TestShape& shape, CopyDirection dir, int32_t max_ctas,
                            size_t chunk_misalign) {
  Transfer t(shape, 17 + chunk_misalign);
  std::vector<uint8_t> buf_ref(t.chunk.size() + chunk_misalign, kPoison);
  std::vector<uint8_t> buf_emu = buf_ref;
  HostCache ref(shape.Layout()), emu(shape.Layout());
  if (dir == kScatter) {
    const std::vector<uint8_t> src = RandomBytes(t.rng, t.chunk.size());
    std::copy(src.begin(), src.end(), buf_ref.begin() + chunk_misalign);
    std::copy(src.begin(), src.end(), buf_emu.begin() + chunk_misalign);
    ref.Fill(kPoison);
    emu.Fill(kPoison);
  }
  HostCache& ref_cache = dir == kGather ? t.cache : ref;
  HostCache& emu_cache = dir == kGather ? t.cache : emu;
  PagedCopyArgs a = t.Args(ref_cache, dir, buf_ref.data() + chunk_misalign);
  a.max_ctas = max_ctas;
  ASSERT_TRUE(ReferenceCopy(a).ok());
  PagedCopyArgs b = t.Args(emu_cache, dir, buf_emu.data() + chunk_misalign);
  b.max_ctas = max_ctas;
  const Status s = internal::EmulateOnHost(b, /*device_ctas=*/132 * 4);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string what = shape.Name() + (dir == kGather ? " gather" : " scatter") + " ctas " +
                           std::to_string(max_ctas) + " misalign " + std::to_string(chunk_misalign);
  EXPECT_EQ(FirstDiff(buf_emu, buf_ref), -1) << what;
  for (size_t i = 0; i < ref.tensors().size(); ++i) {
    EXPECT_EQ(FirstDiff(emu.tensors()[i], ref.tensors()[i]), -1) << what << " tensor " << i;
  }
}

TEST(PagedPlanTest, HostEmulationMatchesReference) {
  for (const TestShape& shape : AllShapes()) {
    for (CopyDirection dir : {kGather, kScatter}) {
      for (int32_t ctas : {0, 1, 3}) ExpectEmulationMatches(shape, dir, ctas, 0);
      for (size_t misalign : {1, 2, 4, 8}) ExpectEmulationMatches(shape, dir, 0, misalign);
    }
  }
}

TEST(PagedPlanTest, ManyLayersSplitIntoLaunches) {
  const TestShape shape{LayoutKind::kCrossLayer, 70, 4, 2, 1, 8, 2};
  ExpectEmulationMatches(shape, kGather, 0, 0);
  ExpectEmulationMatches(shape, kScatter, 5, 0);
  ExpectEmulationMatches(WithKind(shape, LayoutKind::kVllmNhd), kScatter, 0, 0);
}

// The plan of a Llama-3-8B-shaped transfer with fake, aligned pointers.
internal::CopyPlan LlamaPlan(LayoutKind kind, int32_t elem, int32_t head_dim, uintptr_t chunk,
                             int32_t max_ctas) {
  PagedLayout l = TestShape{kind, 32, 1000, 16, 8, head_dim, elem}.Layout();
  static const std::vector<void*> ptrs(64, reinterpret_cast<void*>(uintptr_t{1} << 20));
  static const std::vector<int32_t> ids(16, 3);
  PagedCopyArgs a = ArgsFor(l, ptrs.data(), kind == LayoutKind::kSglangPool ? ptrs.data() : nullptr,
                            kGather, ids, 0, 256, reinterpret_cast<void*>(chunk));
  a.max_ctas = max_ctas;
  internal::CopyPlan plan{};
  int32_t n = 0;
  const Status s = internal::MakePlans(a, 528, &plan, &n);
  return s.ok() && n == 1 ? plan : internal::CopyPlan{};
}

TEST(PagedPlanTest, VectorWidthAndSplit) {
  const uintptr_t aligned = uintptr_t{1} << 24;
  internal::CopyPlan p = LlamaPlan(LayoutKind::kVllmNhd, 2, 128, aligned, 0);
  EXPECT_EQ(p.vec_bytes, 16);
  // A 32 KiB block (2048 vectors) is one tile of a team as large as it needs.
  EXPECT_EQ(p.team_threads, std::min(internal::kCtaThreads, 2048 / internal::kUnroll));
  EXPECT_EQ(p.num_items, int64_t{32} * 2 * 16);
  EXPECT_EQ(p.grid, std::min<int64_t>(528, p.num_items / p.teams_per_cta));
  p = LlamaPlan(LayoutKind::kVllmHnd, 2, 128, aligned, 8);
  EXPECT_EQ(p.vec_bytes, 16);
  EXPECT_EQ(p.team_threads, 256 / internal::kUnroll);  // 16 tokens x 256 B per head
  EXPECT_EQ(p.grid, 8);
  EXPECT_EQ(LlamaPlan(LayoutKind::kVllmNhd, 2, 128, aligned + 4, 0).vec_bytes, 4);
  EXPECT_EQ(LlamaPlan(LayoutKind::kVllmHnd, 2, 7, aligned, 0).vec_bytes, 2);
  EXPECT_EQ(LlamaPlan(LayoutKind::kVllmNhd, 1, 7, aligned, 0).vec_bytes, 8);  // row 56 B
  EXPECT_EQ(LlamaPlan(LayoutKind::kVllmHnd, 1, 7, aligned, 0).vec_bytes, 1);
  EXPECT_EQ(LlamaPlan(LayoutKind::kSglangPool, 4, 128, aligned, 0).vec_bytes, 16);
}

TEST(PagedLayoutTest, CanImplementRejectsBadArguments) {
  Transfer t(TestShape{}, 3);
  const PagedCopyArgs good = t.Args(t.cache, kGather, t.chunk.data());
  ASSERT_TRUE(CanImplement(good).ok());
  std::vector<PagedCopyArgs> bad(12, good);
  bad[0].layout.elem_bytes = 3;
  bad[1].layer_ptrs = nullptr;
  bad[2].num_tokens = 0;
  bad[3].num_tokens = good.num_tokens + good.layout.block_size;  // more blocks than given
  bad[4].layer_begin = 1;
  bad[4].layer_count = 2;
  bad[5].chunk = nullptr;
  bad[6].v_layer_ptrs = good.layer_ptrs;  // only for sglang_pool
  bad[7].layout.kind = LayoutKind::kMla;  // kv_heads 2
  bad[8].skip_blocks = good.num_block_ids + 1;
  bad[9].max_ctas = -1;
  bad[10].layout.head_dim = 0;
  bad[11].block_ids = nullptr;
  for (size_t i = 0; i < bad.size(); ++i) {
    const Status s = CanImplement(bad[i]);
    EXPECT_EQ(s.code, StatusCode::kInvalidArgument) << "case " << i << ": " << s.ToString();
  }
}

TEST(PagedReferenceTest, OutOfRangeBlockIdWritesNothing) {
  Transfer t(TestShape{}, 5);
  t.ids.back() = t.cache.layout().num_blocks;
  std::vector<uint8_t> chunk(t.chunk.size(), kPoison);
  const Status s = ReferenceCopy(t.Args(t.cache, kGather, chunk.data()));
  EXPECT_EQ(s.code, StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(FirstDiff(chunk, std::vector<uint8_t>(chunk.size(), kPoison)), -1);
}

}  // namespace
}  // namespace kvstash::paged::testing
