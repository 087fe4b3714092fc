// kvstash_cuda_bench: bandwidth of the paged gather/scatter kernels against
// cudaMemcpyAsync of the same bytes, measured in the same run, for Llama-shaped caches.
//
//   kvstash_cuda_bench [--layouts vllm_nhd,vllm_hnd|all] [--chunks 4] [--iters 20]
//                      [--reps 5] [--max_ctas 8] [--json FILE]
//
// Each rep times `iters` rounds of `chunks` whole-model calls (one launch per 256-token
// chunk, blocks drawn at random from the cache) and, interleaved, `iters` rounds of
// cudaMemcpyAsync of each chunk's bytes; the table shows medians over reps. Paths: d2d
// (chunk in device memory) and host (chunk in pinned host memory mapped into the device:
// gather = device -> host, scatter = host -> device; memcpy D2H / H2D). Every row is run
// uncapped and with the CTA cap --max_ctas.
//
// Needs only the CUDA runtime (built by the standalone cuda/ project).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kvstash/paged/gpu_copy.h"

namespace kvstash::paged {
namespace {

struct Flags {
  std::vector<std::string> layouts = {"vllm_nhd", "vllm_hnd"};
  int chunks = 4, iters = 20, reps = 5, max_ctas = 8, chunk_tokens = 256;
  std::string json;
};

struct Model {
  const char* name;
  int32_t layers, kv_heads, head_dim;
};
constexpr Model kModels[] = {{"llama3-8b", 32, 8, 128}, {"llama2-7b", 32, 32, 128}};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto num = [&](int* out) { return v && (*out = std::atoi(v), ++i, true); };
    if (a == "--layouts" && v) {
      f->layouts = std::string(v) == "all"
                       ? std::vector<std::string>{"vllm_nhd",       "vllm_hnd",    "flashinfer_nhd",
                                                  "flashinfer_hnd", "cross_layer", "sglang_pool"}
                       : Split(v);
      ++i;
    } else if (a == "--json" && v) {
      f->json = v;
      ++i;
    } else if (!((a == "--chunks" && num(&f->chunks)) || (a == "--iters" && num(&f->iters)) ||
                 (a == "--reps" && num(&f->reps)) || (a == "--max_ctas" && num(&f->max_ctas)) ||
                 (a == "--chunk_tokens" && num(&f->chunk_tokens)))) {
      std::fprintf(stderr,
                   "usage: %s [--layouts L,L|all] [--chunks N] [--iters N] [--reps N] "
                   "[--max_ctas N] [--chunk_tokens N] [--json FILE]\n",
                   argv[0]);
      return false;
    }
  }
  return f->chunks > 0 && f->iters > 0 && f->reps > 0 && f->max_ctas >= 0;
}

#define BENCH_CHECK(expr)                                                \
  do {                                                                   \
    const cudaError_t err_ = (expr);                                     \
    if (err_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(err_));                            \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

// The paged cache of one shape plus chunk buffers in device and mapped pinned memory.
struct Setup {
  PagedLayout layout;
  std::vector<void*> tensors, k_ptrs, v_ptrs;
  std::vector<int32_t> ids;  // chunks * blocks_per_chunk, random
  int32_t* dev_ids = nullptr;
  char* dev_chunks = nullptr;
  char* dev_src = nullptr;      // memcpy source/target on the device side
  char* host_chunks = nullptr;  // pinned, mapped
  char* host_chunks_dev = nullptr;
  int64_t chunk_bytes = 0;
};

Setup MakeSetup(const Model& m, LayoutKind kind, const Flags& f) {
  Setup s;
  const int32_t blocks_per_chunk = f.chunk_tokens / 16;
  s.layout = {kind, m.layers, 2 * f.chunks * blocks_per_chunk, 16, m.kv_heads, m.head_dim, 2};
  const size_t n = kind == LayoutKind::kCrossLayer ? 1 : size_t(m.layers);
  for (size_t i = 0; i < n * (kind == LayoutKind::kSglangPool ? 2 : 1); ++i) {
    void* p = nullptr;
    BENCH_CHECK(cudaMalloc(&p, static_cast<size_t>(LayerTensorBytes(s.layout))));
    BENCH_CHECK(cudaMemset(p, int(i), static_cast<size_t>(LayerTensorBytes(s.layout))));
    s.tensors.push_back(p);
    (i < n ? s.k_ptrs : s.v_ptrs).push_back(p);
  }
  s.ids.resize(static_cast<size_t>(s.layout.num_blocks));
  std::iota(s.ids.begin(), s.ids.end(), 0);
  std::shuffle(s.ids.begin(), s.ids.end(), std::mt19937(42));
  BENCH_CHECK(cudaMalloc(&s.dev_ids, s.ids.size() * sizeof(int32_t)));
  BENCH_CHECK(
      cudaMemcpy(s.dev_ids, s.ids.data(), s.ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  s.chunk_bytes = ChunkBytes(s.layout, f.chunk_tokens, m.layers);
  const size_t all = static_cast<size_t>(s.chunk_bytes) * f.chunks;
  BENCH_CHECK(cudaMalloc(&s.dev_chunks, all));
  BENCH_CHECK(cudaMalloc(&s.dev_src, all));
  BENCH_CHECK(cudaMemset(s.dev_src, 2, all));
  BENCH_CHECK(cudaHostAlloc(&s.host_chunks, all, cudaHostAllocMapped));
  std::memset(s.host_chunks, 1, all);
  BENCH_CHECK(
      cudaHostGetDevicePointer(reinterpret_cast<void**>(&s.host_chunks_dev), s.host_chunks, 0));
  return s;
}

void FreeSetup(Setup* s) {
  for (void* p : s->tensors) cudaFree(p);
  cudaFree(s->dev_ids);
  cudaFree(s->dev_chunks);
  cudaFree(s->dev_src);
  cudaFreeHost(s->host_chunks);
}

PagedCopyArgs ChunkArgs(const Setup& s, const Flags& f, int c, CopyDirection dir, bool host,
                        int32_t max_ctas) {
  PagedCopyArgs a;
  a.layout = s.layout;
  a.direction = dir;
  a.layer_ptrs = s.k_ptrs.data();
  a.v_layer_ptrs = s.v_ptrs.empty() ? nullptr : s.v_ptrs.data();
  a.block_ids = s.dev_ids;
  a.num_block_ids = static_cast<int32_t>(s.ids.size());
  a.skip_blocks = c * (f.chunk_tokens / 16);
  a.num_tokens = f.chunk_tokens;
  a.chunk = (host ? s.host_chunks_dev : s.dev_chunks) + c * s.chunk_bytes;
  a.max_ctas = max_ctas;
  return a;
}

// Seconds per round of `chunks` kernel calls (kernel) or memcpys (!kernel).
double TimeRounds(const Setup& s, const Flags& f, CopyDirection dir, bool host, int32_t ctas,
                  bool kernel, cudaStream_t stream) {
  cudaEvent_t start, stop;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));
  BENCH_CHECK(cudaEventRecord(start, stream));
  for (int it = 0; it < f.iters; ++it) {
    for (int c = 0; c < f.chunks; ++c) {
      if (kernel) {
        const Status st = GpuPagedCopy::Run(ChunkArgs(s, f, c, dir, host, ctas), stream);
        if (!st.ok()) {
          std::fprintf(stderr, "Run: %s\n", st.ToString().c_str());
          std::exit(1);
        }
        continue;
      }
      char* dev = s.dev_src + c * s.chunk_bytes;
      char* other = (host ? s.host_chunks : s.dev_chunks) + c * s.chunk_bytes;
      const bool to_chunk = dir == CopyDirection::kGather;
      BENCH_CHECK(cudaMemcpyAsync(to_chunk ? other : dev, to_chunk ? dev : other,
                                  static_cast<size_t>(s.chunk_bytes), cudaMemcpyDefault, stream));
    }
  }
  BENCH_CHECK(cudaEventRecord(stop, stream));
  BENCH_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  BENCH_CHECK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / 1e3 / f.iters;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void RunRow(const Model& m, const Setup& s, const Flags& f, CopyDirection dir, bool host,
            int32_t ctas, cudaStream_t stream, FILE* json) {
  TimeRounds(s, f, dir, host, ctas, true, stream);  // warm up both
  TimeRounds(s, f, dir, host, ctas, false, stream);
  std::vector<double> kernel, memcpy_;
  const double bytes = double(s.chunk_bytes) * f.chunks;
  for (int r = 0; r < f.reps; ++r) {
    kernel.push_back(bytes / TimeRounds(s, f, dir, host, ctas, true, stream) / 1e9);
    memcpy_.push_back(bytes / TimeRounds(s, f, dir, host, ctas, false, stream) / 1e9);
  }
  LaunchInfo info;
  GpuPagedCopy::Describe(ChunkArgs(s, f, 0, dir, host, ctas), &info);
  const double k = Median(kernel), c = Median(memcpy_);
  const char* dname = dir == CopyDirection::kGather ? "gather" : "scatter";
  const char* path = host ? (dir == CopyDirection::kGather ? "d2h" : "h2d") : "d2d";
  const std::string cap = ctas ? std::to_string(ctas) : "all";
  std::printf("%-10s %-15s %-8s %-4s %5s %9.1f %9.1f %7.2fx %4d %5d %5d\n", m.name,
              LayoutKindName(s.layout.kind), dname, path, cap.c_str(), k, c, k / c, info.vec_bytes,
              info.grid, info.team_threads);
  if (json) {
    std::fprintf(json,
                 "{\"model\":\"%s\",\"layout\":\"%s\",\"op\":\"%s\",\"path\":\"%s\","
                 "\"max_ctas\":%d,\"chunk_bytes\":%lld,\"chunks\":%d,\"kernel_gbps\":%.3f,"
                 "\"memcpy_gbps\":%.3f,\"ratio\":%.4f,\"vec_bytes\":%d,\"grid\":%d}\n",
                 m.name, LayoutKindName(s.layout.kind), dname, path, ctas,
                 static_cast<long long>(s.chunk_bytes), f.chunks, k, c, k / c, info.vec_bytes,
                 info.grid);
  }
}

}  // namespace
}  // namespace kvstash::paged

int main(int argc, char** argv) {
  using namespace kvstash::paged;
  Flags f;
  if (!ParseFlags(argc, argv, &f)) return 2;
  std::string why;
  if (CudaDeviceCount(&why) == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n", why.c_str());
    return 77;
  }
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs; %d chunks of %d tokens per round, %d rounds, median of %d\n",
              prop.name, prop.multiProcessorCount, f.chunks, f.chunk_tokens, f.iters, f.reps);
  FILE* json = f.json.empty() ? nullptr : std::fopen(f.json.c_str(), "w");
  cudaStream_t stream;
  BENCH_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("%-10s %-15s %-8s %-4s %5s %9s %9s %8s %4s %5s %5s\n", "model", "layout", "op",
              "path", "ctas", "GB/s", "memcpy", "ratio", "vec", "grid", "team");
  for (const auto& m : kModels) {
    for (const std::string& name : f.layouts) {
      LayoutKind kind;
      if (!ParseLayoutKind(name, &kind) || kind == LayoutKind::kMla ||
          PagedLayout{kind}.is_view()) {
        std::fprintf(stderr, "unknown or unsupported layout %s\n", name.c_str());
        return 2;
      }
      Setup s = MakeSetup(m, kind, f);
      for (CopyDirection dir : {CopyDirection::kGather, CopyDirection::kScatter}) {
        for (bool host : {false, true}) {
          for (int32_t ctas : {0, f.max_ctas}) RunRow(m, s, f, dir, host, ctas, stream, json);
        }
      }
      FreeSetup(&s);
    }
  }
  if (json) std::fclose(json);
  return 0;
}
