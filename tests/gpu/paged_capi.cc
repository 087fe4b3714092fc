// A C ABI over Client and PagedTransfer for the GPU end-to-end test (paged_e2e.py), which
// drives real torch KV caches through ctypes. Test-only: the Python package is the
// supported binding.
//
// Every function that can fail returns NULL or -1 and writes a message into `err` (at most
// `errlen` bytes, NUL-terminated). Pointers and streams travel as uint64_t.
//
// Thread-safety: as the wrapped Client and PagedTransfer; a handle is used by one thread.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kvstash/client.h"
#include "kvstash/paged.h"

namespace {

struct CapiLayout {  // paged::PagedLayout, the kind by name (paged::ParseLayoutKind)
  const char* kind;
  int32_t num_layers, num_blocks, block_size, kv_heads, head_dim, elem_bytes;
  int64_t view_block_stride, view_head_stride, view_token_stride;  // the vLLM views only
};

struct CapiTransferOptions {
  int32_t memory;  // 0: device (PagedMemory::kDevice), 1: host
  int32_t device, chunk_tokens, pipeline_depth, max_ctas;
};

// A running operation and the request data its spans point into.
struct CapiHandle {
  std::vector<kvstash::Key128> keys;
  std::vector<int32_t> block_ids;
  kvstash::PagedHandlePtr handle;
};

void SetError(char* err, int errlen, const std::string& msg) {
  if (err == nullptr || errlen <= 0) return;
  const size_t n = std::min(msg.size(), static_cast<size_t>(errlen - 1));
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

int Fail(char* err, int errlen, const absl::Status& s) {
  SetError(err, errlen, s.ToString());
  return -1;
}

}  // namespace

extern "C" {

void* kvs_client_connect(const char* uri, char* err, int errlen) {
  absl::StatusOr<std::unique_ptr<kvstash::Client>> c = kvstash::Client::Connect(uri, {});
  if (!c.ok()) {
    Fail(err, errlen, c.status());
    return nullptr;
  }
  return c->release();
}

void kvs_client_free(void* client) { delete static_cast<kvstash::Client*>(client); }

// 0 when the daemon answers a health check as serving.
int kvs_client_health(void* client, char* err, int errlen) {
  absl::StatusOr<kvstash::HealthInfo> h = static_cast<kvstash::Client*>(client)->Health();
  if (!h.ok()) return Fail(err, errlen, h.status());
  if (!h->serving) return Fail(err, errlen, absl::UnavailableError("not serving"));
  return 0;
}

// A transfer for a cache of `layout` whose tensors are `layer_ptrs` (and `v_layer_ptrs` for
// the SGLang pool). The namespace is the model's, so transfers
// of different layouts of one model share chunks.
void* kvs_transfer_create(void* client, const char* model_id, const char* dtype,
                          const CapiLayout* layout, const uint64_t* layer_ptrs, int num_layer_ptrs,
                          const uint64_t* v_layer_ptrs, int num_v_layer_ptrs,
                          const CapiTransferOptions* opts, char* err, int errlen) {
  auto* c = static_cast<kvstash::Client*>(client);
  kvstash::paged::LayoutKind kind;
  if (!kvstash::paged::ParseLayoutKind(layout->kind, &kind)) {
    Fail(err, errlen, absl::InvalidArgumentError(std::string("unknown layout ") + layout->kind));
    return nullptr;
  }
  kvstash::PagedCache cache;
  cache.layout = {kind,
                  layout->num_layers,
                  layout->num_blocks,
                  layout->block_size,
                  layout->kv_heads,
                  layout->head_dim,
                  layout->elem_bytes,
                  layout->view_block_stride,
                  layout->view_head_stride,
                  layout->view_token_stride};
  for (int i = 0; i < num_layer_ptrs; ++i) {
    cache.layers.push_back(reinterpret_cast<void*>(layer_ptrs[i]));
  }
  for (int i = 0; i < num_v_layer_ptrs; ++i) {
    cache.v_layers.push_back(reinterpret_cast<void*>(v_layer_ptrs[i]));
  }
  cache.memory = opts->memory == 0 ? kvstash::PagedMemory::kDevice : kvstash::PagedMemory::kHost;
  cache.device = opts->device;
  kvstash::Namespace spec;
  spec.model_id = model_id;
  spec.dtype = dtype;
  spec.num_layers = static_cast<uint32_t>(layout->num_layers);
  spec.kv_heads = static_cast<uint32_t>(layout->kv_heads);
  spec.head_dim = static_cast<uint32_t>(layout->head_dim);
  spec.chunk_tokens = static_cast<uint32_t>(opts->chunk_tokens);
  absl::StatusOr<kvstash::NamespaceHandle> ns = c->OpenNamespace(spec);
  if (!ns.ok()) {
    Fail(err, errlen, ns.status());
    return nullptr;
  }
  kvstash::PagedOptions options;
  options.chunk_tokens = static_cast<uint32_t>(opts->chunk_tokens);
  options.pipeline_depth = opts->pipeline_depth;
  options.max_ctas = opts->max_ctas;
  auto t = kvstash::PagedTransfer::Create(c, *ns, std::move(cache), options);
  if (!t.ok()) {
    Fail(err, errlen, t.status());
    return nullptr;
  }
  return t->release();
}

void kvs_transfer_free(void* transfer) { delete static_cast<kvstash::PagedTransfer*>(transfer); }

// Starts an operation: op 0 PutPagedAsync, 1 GetPagedAsync, 2 GetPagedLayerwise. `keys`
// holds num_keys 16-byte keys; `stream` is the engine's cudaStream_t (0: legacy stream).
void* kvs_transfer_start(void* transfer, int op, const uint8_t* keys, int num_keys,
                         const int32_t* block_ids, int num_block_ids, int skip_blocks,
                         int num_tokens, uint64_t stream, char* err, int errlen) {
  if (op < 0 || op > 2) {
    Fail(err, errlen, absl::InvalidArgumentError("op must be 0, 1 or 2"));
    return nullptr;
  }
  auto h = std::make_unique<CapiHandle>();
  h->keys.resize(static_cast<size_t>(std::max(num_keys, 0)));
  for (size_t i = 0; i < h->keys.size(); ++i) std::memcpy(h->keys[i].data(), keys + 16 * i, 16);
  h->block_ids.assign(block_ids, block_ids + std::max(num_block_ids, 0));
  kvstash::PagedRequest r;
  r.keys = h->keys;
  r.block_ids = h->block_ids;
  r.skip_blocks = skip_blocks;
  r.num_tokens = num_tokens;
  r.cuda_stream = reinterpret_cast<void*>(stream);
  auto* t = static_cast<kvstash::PagedTransfer*>(transfer);
  h->handle = op == 0   ? t->PutPagedAsync(r)
              : op == 1 ? t->GetPagedAsync(r)
                        : t->GetPagedLayerwise(r);
  return h.release();
}

// PagedHandle::StreamWaitLayer(layer, stream), or StreamWait(stream) for layer -1.
int kvs_handle_stream_wait(void* handle, int layer, uint64_t stream, char* err, int errlen) {
  kvstash::PagedHandle* h = static_cast<CapiHandle*>(handle)->handle.get();
  void* s = reinterpret_cast<void*>(stream);
  const absl::Status st = layer < 0 ? h->StreamWait(s) : h->StreamWaitLayer(layer, s);
  return st.ok() ? 0 : Fail(err, errlen, st);
}

// Waits for the operation; writes each chunk's absl status code into codes[num_keys] and
// returns the leading OK chunks, or -1 on a call-level error.
int kvs_handle_wait(void* handle, int32_t* codes, char* err, int errlen) {
  auto* h = static_cast<CapiHandle*>(handle);
  absl::StatusOr<kvstash::PagedResult> r = h->handle->Wait();
  if (!r.ok()) return Fail(err, errlen, r.status());
  for (size_t i = 0; i < r->chunks.size(); ++i) {
    codes[i] = static_cast<int32_t>(r->chunks[i].code());
  }
  return static_cast<int>(r->leading_ok);
}

void kvs_handle_free(void* handle) { delete static_cast<CapiHandle*>(handle); }

}  // extern "C"
