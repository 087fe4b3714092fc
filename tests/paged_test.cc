// PagedTransfer against a real kvstashd (CPU path: host-memory caches): put from a vLLM
// NHD cache, get into a FlashInfer HND cache with another block size and block table, and
// layer-wise into an SGLang token pool; byte-exact, partial last chunk included.
#include "kvstash/paged.h"

#include <random>
#include <vector>

#include "cuda/tests/paged_test_util.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "kvstash/paged/reference.h"
#include "tests/daemon_fixture.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

using paged::LayoutKind;
using paged::testing::HostCache;
using paged::testing::TestShape;

constexpr uint32_t kChunkTokens = 32;

PagedCache HostPaged(HostCache& c) {
  PagedCache cache;
  cache.layout = c.layout();
  cache.memory = PagedMemory::kHost;
  for (size_t i = 0; i < c.tensors().size(); ++i) {
    (i < c.k_tensors() ? cache.layers : cache.v_layers).push_back(c.tensors()[i].data());
  }
  return cache;
}

// Every requested token of `c` in canonical layout.
std::vector<uint8_t> Canonical(HostCache& c, const std::vector<int32_t>& ids, int32_t skip,
                               int32_t tokens) {
  std::vector<uint8_t> out(size_t(paged::ChunkBytes(c.layout(), tokens, c.layout().num_layers)));
  const auto a =
      paged::testing::ArgsFor(c, paged::CopyDirection::kGather, ids, skip, tokens, out.data());
  EXPECT_TRUE(paged::ReferenceCopy(a).ok());
  return out;
}

class PagedIntegrationTest : public DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixtureOptions options;
    options.spec = TestNamespace("paged-model", kChunkTokens);
    options.spec->num_layers = 3;
    options.spec->kv_heads = 2;
    options.spec->head_dim = 40;
    ASSERT_NO_FATAL_FAILURE(StartDaemon(options));
  }

  // Keys of every chunk of `tokens`, the partial last one included.
  std::vector<Key128> KeysOf(const std::vector<int32_t>& tokens) const {
    KeyChain chain(spec_);
    std::vector<Key128> keys = chain.PrefixKeys(tokens);
    const size_t full = keys.size() * kChunkTokens;
    if (full < tokens.size()) {
      keys.push_back(chain.Next(keys.empty() ? chain.Root() : keys.back(),
                                absl::MakeConstSpan(tokens).subspan(full)));
    }
    return keys;
  }

  TestShape Shape(LayoutKind kind, int32_t block_size, int32_t blocks) const {
    return paged::testing::WithKind({kind, int32_t(spec_.num_layers), blocks, block_size,
                                     int32_t(spec_.kv_heads), int32_t(spec_.head_dim), 2},
                                    kind);
  }

  std::mt19937_64 rng_{77};
};

TEST_F(PagedIntegrationTest, PutOneLayoutGetAnotherByteExact) {
  std::vector<int32_t> tokens(4 * kChunkTokens + 11);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(1000 + i);
  const std::vector<Key128> keys = KeysOf(tokens);
  ASSERT_EQ(keys.size(), 5u);
  const int32_t n = int32_t(tokens.size());

  HostCache src(Shape(LayoutKind::kVllmNhd, 16, 24).Layout());
  src.FillRandom(rng_);
  const auto src_ids = paged::testing::RandomBlockIds(rng_, 24, 24);
  PagedOptions options;
  options.chunk_tokens = kChunkTokens;
  auto put = PagedTransfer::Create(client_.get(), ns_, HostPaged(src), options);
  ASSERT_TRUE(put.ok()) << put.status();
  absl::StatusOr<PagedResult> r = (*put)->PutPaged({keys, src_ids, 1, n});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->leading_ok, 5u);
  auto hits = client_->Lookup(ns_, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 5u);

  HostCache hnd(Shape(LayoutKind::kFlashInferHnd, 8, 40).Layout());
  hnd.Fill(0);
  const auto hnd_ids = paged::testing::RandomBlockIds(rng_, 40, 40);
  auto get = PagedTransfer::Create(client_.get(), ns_, HostPaged(hnd), options);
  ASSERT_TRUE(get.ok()) << get.status();
  r = (*get)->GetPaged({keys, hnd_ids, 3, n});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->leading_ok, 5u);
  EXPECT_TRUE(Canonical(hnd, hnd_ids, 3, n) == Canonical(src, src_ids, 1, n));

  HostCache pool(Shape(LayoutKind::kSglangPool, 1, 400).Layout());
  pool.Fill(0);
  const auto pool_ids = paged::testing::RandomBlockIds(rng_, 400, 400);
  auto layered = PagedTransfer::Create(client_.get(), ns_, HostPaged(pool), options);
  ASSERT_TRUE(layered.ok()) << layered.status();
  PagedHandlePtr h = (*layered)->GetPagedLayerwise({keys, pool_ids, 0, n});
  for (int32_t l = 0; l < int32_t(spec_.num_layers); ++l) {
    EXPECT_TRUE(h->StreamWaitLayer(l, nullptr).ok());
  }
  r = h->Wait();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->leading_ok, 5u);
  EXPECT_TRUE(Canonical(pool, pool_ids, 0, n) == Canonical(src, src_ids, 1, n));
}

TEST_F(PagedIntegrationTest, MissingChunksStopTheLeadingRun) {
  std::vector<int32_t> tokens(3 * kChunkTokens);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t(7 * i);
  const std::vector<Key128> keys = KeysOf(tokens);
  HostCache cache(Shape(LayoutKind::kVllmNhd, 16, 8).Layout());
  cache.FillRandom(rng_);
  const std::vector<int32_t> ids = {5, 6, 7, 0, 1, 2};
  PagedOptions options;
  options.chunk_tokens = kChunkTokens;
  auto t = PagedTransfer::Create(client_.get(), ns_, HostPaged(cache), options);
  ASSERT_TRUE(t.ok()) << t.status();
  // Only the first chunk is stored.
  ASSERT_TRUE(
      (*t)->PutPaged({absl::MakeConstSpan(keys).subspan(0, 1), ids, 0, int32_t(kChunkTokens)})
          .ok());
  absl::StatusOr<PagedResult> r = (*t)->GetPaged({keys, ids, 0, int32_t(tokens.size())});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->leading_ok, 1u);
  EXPECT_TRUE(absl::IsNotFound(r->chunks[1])) << r->chunks[1];
  EXPECT_TRUE(absl::IsNotFound(r->chunks[2])) << r->chunks[2];
}

}  // namespace
}  // namespace kvstash::testing
