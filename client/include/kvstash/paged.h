// Paged KV transfers: move an engine's paged KV cache to and from kvstashd chunks.
//
//   kvstash::PagedCache cache;                     // the engine's cache, described once
//   cache.layout = {kvstash::paged::LayoutKind::kVllmNhd, /*num_layers=*/32,
//                   /*num_blocks=*/4096, /*block_size=*/16, /*kv_heads=*/8,
//                   /*head_dim=*/128, /*elem_bytes=*/2};
//   cache.layers = {k_v_tensor_of_layer_0, ...};   // device pointers
//   auto xfer = kvstash::PagedTransfer::Create(client.get(), ns, cache, {});
//   kvstash::PagedRequest req;                     // one prompt's chunks
//   req.keys = keys; req.block_ids = block_table; req.num_tokens = n;
//   req.cuda_stream = engine_stream;
//   (*xfer)->PutPaged(req);                        // gather -> pinned staging -> Put
//   auto h = (*xfer)->GetPagedAsync(req);          // Get -> pinned staging -> scatter
//   h->StreamWait(engine_stream);                  // forward pass runs after the scatters
//
// Chunks use the canonical layout "kvstash.layer_kv_token.v1" (docs/chunk-format.md), so an
// engine with another paged layout or block size reads what this one wrote. Transfers are
// pipelined: chunk i's network transfer overlaps chunk i+1's copy (pipeline_depth staging
// buffers). A device cache needs a CUDA build and a GPU; a host cache (PagedMemory::kHost)
// always works and uses the CPU reference copies.
//
// Thread-safety: PagedTransfer is thread-safe; its operations run one at a time (each uses
// all staging buffers), so use one PagedTransfer per concurrent stream of requests.
// Handles may be used from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "kvstash/paged/layout.h"

namespace kvstash {

// PutItem/GetItem `format` of a paged chunk: layout "kvstash.layer_kv_token.v1".
inline constexpr uint32_t kChunkFormatLayerKvTokenV1 = 0x4b564c31;  // "KVL1"

enum class PagedMemory {
  kDevice,  // cudaMalloc'd tensors on cache.device; GPU copy kernels
  kHost,    // host memory; CPU reference copies
};

// An engine's paged KV cache. Tensors must stay valid while a PagedTransfer uses them.
struct PagedCache {
  paged::PagedLayout layout;
  // One tensor per layer (kCrossLayer: one for the whole model); kSglangPool: the K pools.
  std::vector<void*> layers;
  // kSglangPool only: the V pools, one per layer.
  std::vector<void*> v_layers;
  PagedMemory memory = PagedMemory::kDevice;
  int device = 0;  // CUDA device of a kDevice cache
};

struct PagedOptions {
  // Tokens per chunk: the namespace's chunk_tokens; a multiple of layout.block_size.
  uint32_t chunk_tokens = 256;
  // Staging buffers of one chunk each (pinned host memory with a GPU). 2 = double
  // buffering: one chunk on the wire while the next is copied. More helps when the
  // network is bursty, at chunk-size bytes each.
  int pipeline_depth = 2;
  // Cap on the CTAs of each copy kernel (0: the whole GPU). A few CTAs (e.g. 8) leave the
  // SMs to the engine's forward pass and still saturate PCIe for host staging.
  int32_t max_ctas = 0;

  // INVALID_ARGUMENT naming the field: chunk_tokens > 0, 1 <= pipeline_depth <= 16,
  // max_ctas >= 0.
  absl::Status Validate() const;
};

// One request: the chunks of a prompt prefix.
struct PagedRequest {
  // One key per chunk, in prompt order (KeyChain::PrefixKeys).
  absl::Span<const Key128> keys;
  // The request's block table (host memory), as the engine's scheduler holds it.
  absl::Span<const int32_t> block_ids;
  // Leading block_ids whose tokens are not part of the transfer (already cached). Chunk i
  // starts at block skip_blocks + i * chunk_tokens / block_size.
  int32_t skip_blocks = 0;
  // Tokens covered by `keys`: every chunk is full except possibly the last, so
  // (keys.size() - 1) * chunk_tokens < num_tokens <= keys.size() * chunk_tokens.
  int32_t num_tokens = 0;
  // cudaStream_t of the engine (kDevice). Puts gather what was queued on it before the
  // call; gets are made visible to it by PagedHandle::StreamWait. nullptr: legacy stream.
  void* cuda_stream = nullptr;
};

struct PagedResult {
  // One per key: OK, or why that chunk was not transferred (a Get's NOT_FOUND, a
  // size or format mismatch as FAILED_PRECONDITION, a call error).
  std::vector<absl::Status> chunks;
  // Chunks OK from the first on (what an engine can use of a prefix).
  uint32_t leading_ok = 0;
};

// Completion of an asynchronous paged transfer.
class PagedHandle {
 public:
  virtual ~PagedHandle() = default;
  // Blocks until the whole transfer is done (network and copies).
  virtual absl::StatusOr<PagedResult> Wait() = 0;
  // Gets: blocks until every scatter is enqueued, then makes `cuda_stream` wait on the
  // device for them (cudaStreamWaitEvent): kernels queued on it afterwards see the
  // scattered KV. Puts and the CPU path: returns once the transfer is done. Handles must
  // not be used after their PagedTransfer is destroyed.
  virtual absl::Status StreamWait(void* cuda_stream) = 0;
  // Layer-wise gets only: as StreamWait, for the scatter of layer `layer` alone, so the
  // forward pass of layer 0 starts while later layers are still being copied.
  virtual absl::Status StreamWaitLayer(int32_t layer, void* cuda_stream) = 0;
};
using PagedHandlePtr = std::unique_ptr<PagedHandle>;

class PagedTransfer {
 public:
  // `client` must outlive the transfer. INVALID_ARGUMENT for a bad cache or options,
  // UNAVAILABLE for a device cache without a CUDA build or device.
  static absl::StatusOr<std::unique_ptr<PagedTransfer>> Create(Client* client, NamespaceHandle ns,
                                                               PagedCache cache,
                                                               PagedOptions options = {});
  virtual ~PagedTransfer() = default;

  // Gathers each chunk into staging and puts it. Returns a call-level error (bad request)
  // or the per-chunk results.
  virtual absl::StatusOr<PagedResult> PutPaged(const PagedRequest& request) = 0;
  // Gets each chunk into staging and scatters it into the cache; waits for the scatters.
  virtual absl::StatusOr<PagedResult> GetPaged(const PagedRequest& request) = 0;

  // Asynchronous forms. `request`'s spans must stay valid until Wait returns.
  virtual PagedHandlePtr PutPagedAsync(const PagedRequest& request) = 0;
  virtual PagedHandlePtr GetPagedAsync(const PagedRequest& request) = 0;
  // Fetches every chunk, then scatters layer by layer (all chunks of layer 0 first, ...);
  // StreamWaitLayer(l) orders the engine's layer-l work after layer l's scatter.
  virtual PagedHandlePtr GetPagedLayerwise(const PagedRequest& request) = 0;
};

}  // namespace kvstash
