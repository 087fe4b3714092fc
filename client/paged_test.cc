// PagedTransfer on the CPU path against an in-memory Client: put from one paged layout,
// get into another (different block size and block table), byte-exact; pipelining depths;
// layer-wise gets; misses, foreign chunks and bad requests.
#include "kvstash/paged.h"

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cuda/tests/paged_test_util.h"
#include "gtest/gtest.h"
#include "kvstash/paged/reference.h"

namespace kvstash {
namespace {

using paged::LayoutKind;
using paged::testing::HostCache;
using paged::testing::TestShape;

// A Client keeping chunks in a map. Thread-safe.
class MemoryClient final : public Client {
 public:
  absl::StatusOr<NamespaceHandle> OpenNamespace(const Namespace&) override {
    return NamespaceHandle{};
  }
  absl::StatusOr<LookupResult> Lookup(NamespaceHandle, absl::Span<const Key128>, uint32_t,
                                      uint64_t) override {
    return absl::UnimplementedError("lookup");
  }
  absl::Status Put(NamespaceHandle, absl::Span<PutItem> items) override {
    absl::MutexLock lock(&mu_);
    for (PutItem& it : items) {
      const auto* p = static_cast<const uint8_t*>(it.data);
      chunks_[it.key] = {std::vector<uint8_t>(p, p + it.size), it.tokens, it.format};
      it.status = absl::OkStatus();
    }
    ++puts_;
    return absl::OkStatus();
  }
  absl::Status Get(NamespaceHandle, absl::Span<GetItem> items, uint64_t) override {
    absl::MutexLock lock(&mu_);
    for (GetItem& it : items) {
      auto found = chunks_.find(it.key);
      if (found == chunks_.end()) {
        it.status = absl::NotFoundError("no such chunk");
        continue;
      }
      it.size = found->second.bytes.size();
      it.tokens = found->second.tokens;
      it.format = found->second.format;
      it.status =
          it.size > it.capacity ? absl::ResourceExhaustedError("capacity") : absl::OkStatus();
      if (it.status.ok()) std::memcpy(it.data, found->second.bytes.data(), it.size);
    }
    return absl::OkStatus();
  }
  std::future<absl::Status> PutAsync(NamespaceHandle ns, absl::Span<PutItem> items) override {
    return std::async(std::launch::async, [=] { return Put(ns, items); });
  }
  std::future<absl::Status> GetAsync(NamespaceHandle ns, absl::Span<GetItem> items,
                                     uint64_t lease) override {
    return std::async(std::launch::async, [=] { return Get(ns, items, lease); });
  }
  void RunAsync(std::function<void()> task) override { task(); }
  absl::StatusOr<std::vector<ChunkTier>> Exists(NamespaceHandle,
                                                absl::Span<const Key128>) override {
    return absl::UnimplementedError("exists");
  }
  absl::StatusOr<uint32_t> Delete(NamespaceHandle, absl::Span<const Key128>) override {
    return absl::UnimplementedError("delete");
  }
  absl::StatusOr<ServerStats> Stats(const NamespaceHandle*) override { return ServerStats{}; }
  absl::StatusOr<HealthInfo> Health() override { return HealthInfo{}; }

  void PutRaw(const Key128& key, std::vector<uint8_t> bytes, uint32_t tokens, uint32_t format) {
    absl::MutexLock lock(&mu_);
    chunks_[key] = {std::move(bytes), tokens, format};
  }
  int puts() {
    absl::MutexLock lock(&mu_);
    return puts_;
  }

 private:
  struct Stored {
    std::vector<uint8_t> bytes;
    uint32_t tokens, format;
  };
  absl::Mutex mu_;
  std::map<Key128, Stored> chunks_ ABSL_GUARDED_BY(mu_);
  int puts_ ABSL_GUARDED_BY(mu_) = 0;
};

PagedCache HostPagedCache(HostCache& c) {
  PagedCache cache;
  cache.layout = c.layout();
  cache.memory = PagedMemory::kHost;
  const size_t k = c.k_tensors();
  for (size_t i = 0; i < c.tensors().size(); ++i) {
    (i < k ? cache.layers : cache.v_layers).push_back(c.tensors()[i].data());
  }
  return cache;
}

std::vector<Key128> Keys(int n, uint8_t salt) {
  std::vector<Key128> keys(n);
  for (int i = 0; i < n; ++i) keys[i] = Key128{salt, static_cast<uint8_t>(i), 1, 2, 3};
  return keys;
}

// The request's tokens of `c` gathered into one canonical buffer (for comparisons).
std::vector<uint8_t> Canonical(HostCache& c, const std::vector<int32_t>& ids, int32_t skip,
                               int32_t tokens) {
  std::vector<uint8_t> out(size_t(paged::ChunkBytes(c.layout(), tokens, c.layout().num_layers)));
  auto a = paged::testing::ArgsFor(c, paged::CopyDirection::kGather, ids, skip, tokens, out.data());
  EXPECT_TRUE(paged::ReferenceCopy(a).ok());
  return out;
}

struct RoundTrip {
  TestShape from, to;
  uint32_t chunk_tokens;
  int chunks;
  int32_t tokens;  // total, last chunk partial when not a multiple
  int depth;
  bool layerwise;
};

void RunRoundTrip(const RoundTrip& t) {
  std::mt19937_64 rng(t.chunk_tokens * 31 + t.depth);
  MemoryClient client;
  HostCache src(t.from.Layout()), dst(t.to.Layout());
  src.FillRandom(rng);
  dst.Fill(0xEE);
  const auto src_ids = paged::testing::RandomBlockIds(rng, t.from.blocks, t.from.blocks);
  const auto dst_ids = paged::testing::RandomBlockIds(rng, t.to.blocks, t.to.blocks);
  PagedOptions options;
  options.chunk_tokens = t.chunk_tokens;
  options.pipeline_depth = t.depth;
  auto put = PagedTransfer::Create(&client, {}, HostPagedCache(src), options);
  auto get = PagedTransfer::Create(&client, {}, HostPagedCache(dst), options);
  ASSERT_TRUE(put.ok()) << put.status();
  ASSERT_TRUE(get.ok()) << get.status();
  const std::vector<Key128> keys = Keys(t.chunks, 9);
  PagedRequest req{keys, src_ids, /*skip_blocks=*/1, t.tokens};
  absl::StatusOr<PagedResult> r = (*put)->PutPaged(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->leading_ok, static_cast<uint32_t>(t.chunks));
  EXPECT_EQ(client.puts(), t.chunks);
  PagedRequest back{keys, dst_ids, /*skip_blocks=*/2, t.tokens};
  PagedHandlePtr h = t.layerwise ? (*get)->GetPagedLayerwise(back) : (*get)->GetPagedAsync(back);
  EXPECT_TRUE(h->StreamWait(nullptr).ok());
  if (t.layerwise) {
    EXPECT_TRUE(h->StreamWaitLayer(t.from.layers - 1, nullptr).ok());
  }
  r = h->Wait();
  ASSERT_TRUE(r.ok()) << r.status();
  for (const absl::Status& s : r->chunks) EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(Canonical(dst, dst_ids, 2, t.tokens) == Canonical(src, src_ids, 1, t.tokens))
      << t.from.Name() << " -> " << t.to.Name();
}

TEST(PagedTransferTest, PutFromOneLayoutGetIntoAnother) {
  const TestShape nhd{LayoutKind::kVllmNhd, 3, 40, 4, 2, 8, 2};
  TestShape hnd = paged::testing::WithKind(nhd, LayoutKind::kFlashInferHnd);
  hnd.block_size = 2;
  hnd.blocks = 80;
  TestShape pool = paged::testing::WithKind(nhd, LayoutKind::kSglangPool);
  pool.block_size = 1;
  pool.blocks = 200;
  for (int depth : {1, 2, 3}) {
    RunRoundTrip({nhd, hnd, 16, 5, 4 * 16 + 7, depth, false});
    RunRoundTrip({hnd, pool, 8, 7, 7 * 8, depth, false});
    RunRoundTrip({pool, nhd, 16, 3, 2 * 16 + 1, depth, true});
  }
  TestShape cross = paged::testing::WithKind(nhd, LayoutKind::kCrossLayer);
  RunRoundTrip({cross, nhd, 4, 9, 8 * 4 + 3, 2, true});
}

class PagedTransferErrorsTest : public ::testing::Test {
 protected:
  PagedTransferErrorsTest() : cache_(TestShape{LayoutKind::kVllmNhd, 2, 16, 4, 2, 8, 2}.Layout()) {}
  std::unique_ptr<PagedTransfer> Make(PagedOptions options = {}) {
    options.chunk_tokens = 8;
    auto t = PagedTransfer::Create(&client_, {}, HostPagedCache(cache_), options);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(*t) : nullptr;
  }
  MemoryClient client_;
  HostCache cache_;
  std::vector<int32_t> ids_ = {3, 4, 5, 6, 7, 8};
};

TEST_F(PagedTransferErrorsTest, MissesAndForeignChunksAreReportedPerChunk) {
  auto t = Make();
  const std::vector<Key128> keys = Keys(3, 1);
  ASSERT_TRUE(t->PutPaged({absl::MakeConstSpan(keys).subspan(0, 1), ids_, 0, 8}).ok());
  client_.PutRaw(keys[2], std::vector<uint8_t>(100), 8, kChunkFormatLayerKvTokenV1);
  absl::StatusOr<PagedResult> r = t->GetPaged({keys, ids_, 0, 24});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->chunks[0].ok()) << r->chunks[0];
  EXPECT_TRUE(absl::IsNotFound(r->chunks[1])) << r->chunks[1];
  EXPECT_TRUE(absl::IsFailedPrecondition(r->chunks[2])) << r->chunks[2];
  EXPECT_EQ(r->leading_ok, 1u);
  r = t->GetPagedLayerwise({keys, ids_, 0, 24})->Wait();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->leading_ok, 1u);
}

TEST_F(PagedTransferErrorsTest, BadRequestsFailTheCall) {
  auto t = Make();
  const std::vector<Key128> keys = Keys(2, 2);
  EXPECT_TRUE(absl::IsInvalidArgument(t->PutPaged({keys, ids_, 0, 8}).status()));   // 1 chunk
  EXPECT_TRUE(absl::IsInvalidArgument(t->PutPaged({keys, ids_, 0, 17}).status()));  // 3
  EXPECT_TRUE(absl::IsInvalidArgument(t->PutPaged({keys, ids_, 3, 16}).status()));  // blocks
  EXPECT_TRUE(absl::IsInvalidArgument(t->PutPaged({{}, ids_, 0, 0}).status()));
  const std::vector<int32_t> bad = {0, 1, 16, 2};
  EXPECT_TRUE(absl::IsInvalidArgument(t->GetPaged({keys, bad, 0, 16}).status()));
  PagedHandlePtr h = t->GetPagedAsync({keys, ids_, 0, 8});
  EXPECT_TRUE(absl::IsInvalidArgument(h->StreamWait(nullptr)));
  EXPECT_TRUE(absl::IsInvalidArgument(h->StreamWaitLayer(0, nullptr)));
}

TEST_F(PagedTransferErrorsTest, CreateChecksCacheAndOptions) {
  PagedOptions options;
  options.chunk_tokens = 6;  // not a multiple of block_size 4
  EXPECT_TRUE(absl::IsInvalidArgument(
      PagedTransfer::Create(&client_, {}, HostPagedCache(cache_), options).status()));
  options.chunk_tokens = 8;
  options.pipeline_depth = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(
      PagedTransfer::Create(&client_, {}, HostPagedCache(cache_), options).status()));
  PagedCache cache = HostPagedCache(cache_);
  cache.layers.pop_back();
  EXPECT_TRUE(absl::IsInvalidArgument(PagedTransfer::Create(&client_, {}, cache, {}).status()));
  cache = HostPagedCache(cache_);
  cache.memory = PagedMemory::kDevice;
  auto device = PagedTransfer::Create(&client_, {}, cache, {});
  // A device cache needs a GPU; on hosts without one this is UNAVAILABLE, never a crash.
  if (!device.ok()) {
    EXPECT_TRUE(absl::IsUnavailable(device.status())) << device.status();
  }
}

}  // namespace
}  // namespace kvstash
