// PagedTransfer: request checks, staging, and the pipelined put/get loops.
#include "kvstash/paged.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "client/paged_backend.h"
#include "client/paged_handle.h"

namespace kvstash {

absl::Status PagedOptions::Validate() const {
  if (chunk_tokens == 0) return absl::InvalidArgumentError("chunk_tokens must be > 0");
  if (pipeline_depth < 1 || pipeline_depth > 16) {
    return absl::InvalidArgumentError("pipeline_depth must be in [1, 16]");
  }
  if (max_ctas < 0) return absl::InvalidArgumentError("max_ctas must be >= 0");
  return absl::OkStatus();
}

namespace {

using internal::Fence;
using internal::OpState;
using internal::PagedBackend;

// A request's chunk geometry, checked.
struct Geometry {
  int32_t chunks = 0, chunk_tokens = 0, blocks_per_chunk = 0, num_tokens = 0;
  int32_t TokensOf(int32_t c) const {
    return std::min(chunk_tokens, num_tokens - c * chunk_tokens);
  }
};

absl::Status CheckCache(const PagedCache& cache, const PagedOptions& options) {
  const paged::PagedLayout& l = cache.layout;
  const bool cross = l.kind == paged::LayoutKind::kCrossLayer;
  const bool pool = l.kind == paged::LayoutKind::kSglangPool;
  const size_t want = cross ? 1 : static_cast<size_t>(std::max(l.num_layers, 0));
  if (cache.layers.size() != want || cache.v_layers.size() != (pool ? want : 0)) {
    return absl::InvalidArgumentError("cache.layers must hold " + std::to_string(want) +
                                      " tensors (and cache.v_layers as many for sglang_pool)");
  }
  // Shape and pointer checks of the paged op, on a one-token transfer.
  const int32_t id = 0;
  paged::PagedCopyArgs a;
  a.layout = l;
  a.layer_ptrs = cache.layers.data();
  a.v_layer_ptrs = pool ? cache.v_layers.data() : nullptr;
  a.block_ids = &id;
  a.num_block_ids = 1;
  a.num_tokens = 1;
  a.chunk = const_cast<int32_t*>(&id);
  absl::Status s = internal::ToAbsl(paged::CanImplement(a));
  if (!s.ok()) return s;
  if (options.chunk_tokens % static_cast<uint32_t>(l.block_size) != 0) {
    return absl::InvalidArgumentError("chunk_tokens must be a multiple of layout.block_size");
  }
  return absl::OkStatus();
}

// Thread-safety: thread-safe. Operations run on their own threads (std::async), one at a
// time under op_mu_; handles reach the backend only through StreamWait.
class PagedTransferImpl final : public PagedTransfer {
 public:
  PagedTransferImpl(Client* client, NamespaceHandle ns, PagedCache cache, PagedOptions options,
                    std::unique_ptr<PagedBackend> backend)
      : client_(client),
        ns_(ns),
        cache_(std::move(cache)),
        options_(options),
        backend_(std::move(backend)) {}
  ~PagedTransferImpl() override;

  absl::Status AllocateStaging();
  // A staging buffer from the backend, registered with the client.
  absl::StatusOr<uint8_t*> NewStaging(size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);

  absl::StatusOr<PagedResult> PutPaged(const PagedRequest& r) override {
    return PutPagedAsync(r)->Wait();
  }
  absl::StatusOr<PagedResult> GetPaged(const PagedRequest& r) override {
    return GetPagedAsync(r)->Wait();
  }
  PagedHandlePtr PutPagedAsync(const PagedRequest& r) override {
    return Launch(r, &PagedTransferImpl::RunPut);
  }
  PagedHandlePtr GetPagedAsync(const PagedRequest& r) override {
    return Launch(r, &PagedTransferImpl::RunGet);
  }
  PagedHandlePtr GetPagedLayerwise(const PagedRequest& r) override {
    return Launch(r, &PagedTransferImpl::RunLayerwise);
  }

 private:
  using Runner = absl::StatusOr<PagedResult> (PagedTransferImpl::*)(const PagedRequest&, OpState*);
  PagedHandlePtr Launch(const PagedRequest& r, Runner run);
  absl::StatusOr<Geometry> Check(const PagedRequest& r) const;
  int64_t ChunkBytes(int32_t tokens) const {
    return paged::ChunkBytes(cache_.layout, tokens, cache_.layout.num_layers);
  }
  paged::PagedCopyArgs Args(const PagedRequest& r, const Geometry& g, int32_t c,
                            paged::CopyDirection dir, uint8_t* chunk) const;
  absl::StatusOr<PagedResult> RunPut(const PagedRequest& r, OpState* st)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  absl::StatusOr<PagedResult> RunGet(const PagedRequest& r, OpState* st)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  absl::StatusOr<PagedResult> RunLayerwise(const PagedRequest& r, OpState* st)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  absl::Status GrowLayerwiseStaging(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  // Enqueues the scatter of every received chunk, layer by layer; one fence per layer.
  absl::StatusOr<std::vector<Fence>> ScatterByLayer(const PagedRequest& r, const Geometry& g,
                                                    const std::vector<GetItem>& items,
                                                    const PagedResult& received)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  // Checks a received chunk c against the request.
  absl::Status CheckReceived(const GetItem& item, int32_t tokens) const;
  static void Finish(PagedResult* out);

  Client* const client_;
  const NamespaceHandle ns_;
  const PagedCache cache_;
  const PagedOptions options_;
  // Serializes operations: each uses the backend and every staging buffer. The backend's
  // StreamWait alone is called from handles, on any thread.
  absl::Mutex op_mu_;
  const std::unique_ptr<PagedBackend> backend_;
  std::vector<uint8_t*> staging_ ABSL_GUARDED_BY(op_mu_);  // pipeline_depth full chunks
  uint8_t* layerwise_ ABSL_GUARDED_BY(op_mu_) = nullptr;   // grown on demand
  int64_t layerwise_bytes_ ABSL_GUARDED_BY(op_mu_) = 0;
  absl::Mutex ops_mu_;
  std::vector<std::future<void>> ops_ ABSL_GUARDED_BY(ops_mu_);  // running operations
};

PagedTransferImpl::~PagedTransferImpl() {
  {
    absl::MutexLock lock(&ops_mu_);
    for (auto& op : ops_) op.wait();
  }
  absl::MutexLock lock(&op_mu_);
  for (uint8_t* buf : staging_) client_->UnregisterMemory(buf).IgnoreError();
  if (layerwise_ != nullptr) client_->UnregisterMemory(layerwise_).IgnoreError();
}

absl::StatusOr<uint8_t*> PagedTransferImpl::NewStaging(size_t bytes) {
  absl::StatusOr<uint8_t*> buf = backend_->AllocStaging(bytes);
  // Registration only speeds up transports that map memory (UCX); unregistered memory
  // works as well, so a failure here is not an error.
  if (buf.ok()) client_->RegisterMemory(*buf, bytes).IgnoreError();
  return buf;
}

absl::Status PagedTransferImpl::AllocateStaging() {
  absl::MutexLock lock(&op_mu_);
  const size_t bytes = static_cast<size_t>(ChunkBytes(static_cast<int32_t>(options_.chunk_tokens)));
  for (int i = 0; i < options_.pipeline_depth; ++i) {
    absl::StatusOr<uint8_t*> buf = NewStaging(bytes);
    if (!buf.ok()) return buf.status();
    staging_.push_back(*buf);
  }
  return absl::OkStatus();
}

PagedHandlePtr PagedTransferImpl::Launch(const PagedRequest& r, Runner run) {
  auto state = std::make_shared<OpState>();
  auto task = [this, r, run, state] {
    absl::MutexLock lock(&op_mu_);
    absl::StatusOr<PagedResult> result = (this->*run)(r, state.get());
    state->Done(std::move(result));
  };
  absl::MutexLock lock(&ops_mu_);
  ops_.erase(std::remove_if(ops_.begin(), ops_.end(),
                            [](std::future<void>& f) {
                              return f.wait_for(std::chrono::seconds(0)) ==
                                     std::future_status::ready;
                            }),
             ops_.end());
  ops_.push_back(std::async(std::launch::async, std::move(task)));
  // REQUIRES (documented): handles are used while the transfer exists.
  return internal::MakePagedHandle(
      state, [this](const Fence& f, void* stream) { return backend_->StreamWait(f, stream); });
}

absl::StatusOr<Geometry> PagedTransferImpl::Check(const PagedRequest& r) const {
  Geometry g;
  g.chunks = static_cast<int32_t>(r.keys.size());
  g.chunk_tokens = static_cast<int32_t>(options_.chunk_tokens);
  g.blocks_per_chunk = g.chunk_tokens / cache_.layout.block_size;
  g.num_tokens = r.num_tokens;
  if (g.chunks == 0) return absl::InvalidArgumentError("no keys");
  const int64_t max_tokens = int64_t{g.chunks} * g.chunk_tokens;
  if (r.num_tokens <= max_tokens - g.chunk_tokens || r.num_tokens > max_tokens) {
    return absl::InvalidArgumentError("num_tokens " + std::to_string(r.num_tokens) +
                                      " does not fit " + std::to_string(g.chunks) + " chunks of " +
                                      std::to_string(g.chunk_tokens) + " tokens");
  }
  const int64_t blocks =
      (int64_t{r.num_tokens} + cache_.layout.block_size - 1) / cache_.layout.block_size;
  if (r.skip_blocks < 0 || r.skip_blocks + blocks > static_cast<int64_t>(r.block_ids.size())) {
    return absl::InvalidArgumentError("block_ids holds " + std::to_string(r.block_ids.size()) +
                                      " blocks; the request needs skip_blocks + " +
                                      std::to_string(blocks));
  }
  absl::Status s = internal::ToAbsl(paged::ValidateBlockIds(
      cache_.layout, r.block_ids.data() + r.skip_blocks, static_cast<int32_t>(blocks)));
  if (!s.ok()) return s;
  return g;
}

paged::PagedCopyArgs PagedTransferImpl::Args(const PagedRequest& r, const Geometry& g, int32_t c,
                                             paged::CopyDirection dir, uint8_t* chunk) const {
  paged::PagedCopyArgs a;
  a.layout = cache_.layout;
  a.direction = dir;
  a.layer_ptrs = cache_.layers.data();
  a.v_layer_ptrs = cache_.v_layers.empty() ? nullptr : cache_.v_layers.data();
  a.block_ids = r.block_ids.data();
  a.num_block_ids = static_cast<int32_t>(r.block_ids.size());
  a.skip_blocks = r.skip_blocks + c * g.blocks_per_chunk;
  a.num_tokens = g.TokensOf(c);
  a.chunk = chunk;
  a.max_ctas = options_.max_ctas;
  return a;
}

void PagedTransferImpl::Finish(PagedResult* out) {
  out->leading_ok = 0;
  while (out->leading_ok < out->chunks.size() && out->chunks[out->leading_ok].ok()) {
    ++out->leading_ok;
  }
}

absl::Status PagedTransferImpl::CheckReceived(const GetItem& item, int32_t tokens) const {
  if (!item.status.ok()) return item.status;
  if (item.format != kChunkFormatLayerKvTokenV1 || item.tokens != static_cast<uint32_t>(tokens) ||
      static_cast<int64_t>(item.size) != ChunkBytes(tokens)) {
    return absl::FailedPreconditionError("chunk is not a " + std::to_string(tokens) +
                                         "-token layer_kv_token.v1 chunk of this "
                                         "model (format " +
                                         std::to_string(item.format) + ", " +
                                         std::to_string(item.tokens) + " tokens, " +
                                         std::to_string(item.size) + " bytes)");
  }
  return absl::OkStatus();
}

// Gather chunk c into a staging slot while chunk c - 1 is on the wire.
absl::StatusOr<PagedResult> PagedTransferImpl::RunPut(const PagedRequest& r, OpState* st) {
  absl::StatusOr<Geometry> g = Check(r);
  if (!g.ok()) return g.status();
  absl::Status s = backend_->Begin(r.block_ids, r.cuda_stream);
  if (!s.ok()) return s;
  PagedResult out;
  out.chunks.assign(g->chunks, absl::OkStatus());
  std::vector<PutItem> items(g->chunks);
  const size_t depth = staging_.size();
  std::vector<std::future<absl::Status>> inflight(depth);
  std::vector<int32_t> inflight_chunk(depth, -1);
  auto collect = [&](size_t slot) {
    if (!inflight[slot].valid()) return;
    const absl::Status call = inflight[slot].get();
    const int32_t c = inflight_chunk[slot];
    out.chunks[c] = call.ok() ? items[c].status : call;
  };
  for (int32_t c = 0; c < g->chunks; ++c) {
    const size_t slot = c % depth;
    collect(slot);
    s = backend_->Copy(Args(r, *g, c, paged::CopyDirection::kGather, staging_[slot]));
    absl::StatusOr<Fence> fence = s.ok() ? backend_->Record() : absl::StatusOr<Fence>(s);
    if (fence.ok()) s = backend_->Sync(*fence);
    if (!fence.ok() || !s.ok()) {
      out.chunks[c] = fence.ok() ? s : fence.status();
      continue;
    }
    items[c] = PutItem{r.keys[c], staging_[slot], static_cast<size_t>(ChunkBytes(g->TokensOf(c))),
                       static_cast<uint32_t>(g->TokensOf(c)), kChunkFormatLayerKvTokenV1};
    inflight[slot] = client_->PutAsync(ns_, absl::MakeSpan(&items[c], 1));
    inflight_chunk[slot] = c;
  }
  for (size_t slot = 0; slot < depth; ++slot) collect(slot);
  st->CopiesEnqueued(Fence(), {});  // every gather was waited for above
  Finish(&out);
  return out;
}

// Scatter chunk c from its slot while chunk c + 1 is on the wire.
absl::StatusOr<PagedResult> PagedTransferImpl::RunGet(const PagedRequest& r, OpState* st) {
  absl::StatusOr<Geometry> g = Check(r);
  if (!g.ok()) return g.status();
  absl::Status s = backend_->Begin(r.block_ids, r.cuda_stream);
  if (!s.ok()) return s;
  PagedResult out;
  out.chunks.assign(g->chunks, absl::OkStatus());
  std::vector<GetItem> items(g->chunks);
  const size_t depth = staging_.size();
  std::vector<std::future<absl::Status>> inflight(depth);
  std::vector<Fence> slot_fence(depth);
  auto issue = [&](int32_t c) {
    const size_t slot = c % depth;
    items[c].key = r.keys[c];
    items[c].data = staging_[slot];
    items[c].capacity = static_cast<size_t>(ChunkBytes(g->chunk_tokens));
    inflight[slot] = client_->GetAsync(ns_, absl::MakeSpan(&items[c], 1));
  };
  for (int32_t c = 0; c < std::min<int32_t>(g->chunks, depth); ++c) issue(c);
  for (int32_t c = 0; c < g->chunks; ++c) {
    const size_t slot = c % depth;
    const absl::Status call = inflight[slot].get();
    s = call.ok() ? CheckReceived(items[c], g->TokensOf(c)) : call;
    if (s.ok()) s = backend_->Copy(Args(r, *g, c, paged::CopyDirection::kScatter, staging_[slot]));
    absl::StatusOr<Fence> fence = s.ok() ? backend_->Record() : absl::StatusOr<Fence>(s);
    out.chunks[c] = fence.status();
    if (fence.ok()) slot_fence[slot] = *fence;
    if (c + static_cast<int32_t>(depth) >= g->chunks) continue;
    if (slot_fence[slot] != nullptr) {
      s = backend_->Sync(slot_fence[slot]);  // the scatter has read the slot
      if (!s.ok()) out.chunks[c] = s;
    }
    issue(c + static_cast<int32_t>(depth));
  }
  absl::StatusOr<Fence> all = backend_->Record();
  if (!all.ok()) return all.status();
  st->CopiesEnqueued(*all, {});
  s = backend_->Sync(*all);
  if (!s.ok()) return s;
  Finish(&out);
  return out;
}

absl::Status PagedTransferImpl::GrowLayerwiseStaging(int64_t bytes) {
  if (layerwise_bytes_ >= bytes) return absl::OkStatus();
  if (layerwise_ != nullptr) {  // no copy uses it: Begin waited for earlier copies
    client_->UnregisterMemory(layerwise_).IgnoreError();
    backend_->FreeStaging(layerwise_);
    layerwise_ = nullptr;
    layerwise_bytes_ = 0;
  }
  absl::StatusOr<uint8_t*> buf = NewStaging(static_cast<size_t>(bytes));
  if (!buf.ok()) return buf.status();
  layerwise_ = *buf;
  layerwise_bytes_ = bytes;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Fence>> PagedTransferImpl::ScatterByLayer(
    const PagedRequest& r, const Geometry& g, const std::vector<GetItem>& items,
    const PagedResult& received) {
  std::vector<Fence> layers;
  for (int32_t l = 0; l < cache_.layout.num_layers; ++l) {
    for (int32_t c = 0; c < g.chunks; ++c) {
      if (!received.chunks[c].ok()) continue;
      const int64_t off = paged::ChunkLayerOffset(cache_.layout, g.TokensOf(c), l);
      paged::PagedCopyArgs a =
          Args(r, g, c, paged::CopyDirection::kScatter, static_cast<uint8_t*>(items[c].data) + off);
      a.layer_begin = l;
      a.layer_count = 1;
      absl::Status s = backend_->Copy(a);
      if (!s.ok()) return s;
    }
    absl::StatusOr<Fence> f = backend_->Record();
    if (!f.ok()) return f.status();
    layers.push_back(*f);
  }
  return layers;
}

// Fetch every chunk in one call, then scatter layer by layer with a fence per layer.
absl::StatusOr<PagedResult> PagedTransferImpl::RunLayerwise(const PagedRequest& r, OpState* st) {
  absl::StatusOr<Geometry> g = Check(r);
  if (!g.ok()) return g.status();
  const int64_t chunk_bytes = ChunkBytes(g->chunk_tokens);
  absl::Status s = backend_->Begin(r.block_ids, r.cuda_stream);
  if (s.ok()) s = GrowLayerwiseStaging(chunk_bytes * g->chunks);
  if (!s.ok()) return s;
  std::vector<GetItem> items(g->chunks);
  for (int32_t c = 0; c < g->chunks; ++c) {
    items[c].key = r.keys[c];
    items[c].data = layerwise_ + c * chunk_bytes;
    items[c].capacity = static_cast<size_t>(chunk_bytes);
  }
  s = client_->Get(ns_, absl::MakeSpan(items));
  if (!s.ok()) return s;
  PagedResult out;
  for (int32_t c = 0; c < g->chunks; ++c) {
    out.chunks.push_back(CheckReceived(items[c], g->TokensOf(c)));
  }
  absl::StatusOr<std::vector<Fence>> layers = ScatterByLayer(r, *g, items, out);
  absl::StatusOr<Fence> all =
      layers.ok() ? backend_->Record() : absl::StatusOr<Fence>(layers.status());
  if (!all.ok()) return all.status();
  st->CopiesEnqueued(*all, std::move(*layers));
  s = backend_->Sync(*all);
  if (!s.ok()) return s;
  Finish(&out);
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PagedTransfer>> PagedTransfer::Create(Client* client,
                                                                     NamespaceHandle ns,
                                                                     PagedCache cache,
                                                                     PagedOptions options) {
  if (client == nullptr) return absl::InvalidArgumentError("client is null");
  absl::Status s = options.Validate();
  if (s.ok()) s = CheckCache(cache, options);
  if (!s.ok()) return s;
  std::unique_ptr<PagedBackend> backend;
  if (cache.memory == PagedMemory::kDevice) {
    absl::StatusOr<std::unique_ptr<PagedBackend>> cuda =
        internal::MakeCudaPagedBackend(cache.device);
    if (!cuda.ok()) return cuda.status();
    backend = std::move(*cuda);
  } else {
    backend = internal::MakeCpuPagedBackend();
  }
  auto t = std::make_unique<PagedTransferImpl>(client, ns, std::move(cache), options,
                                               std::move(backend));
  s = t->AllocateStaging();
  if (!s.ok()) return s;
  return std::unique_ptr<PagedTransfer>(std::move(t));
}

}  // namespace kvstash
