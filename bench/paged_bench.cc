// kvstash_paged_bench: end-to-end PutPaged / GetPaged / GetPagedLayerwise through a local
// kvstashd, against plain Client::Put / Get of the same chunk bytes from contiguous
// buffers in the same run (the ratio is what the paged copies and their pipelining cost).
//
//   kvstash_paged_bench [--model llama3-8b|llama2-7b] [--layout vllm_nhd] [--chunks 8]
//                       [--rounds 3] [--depth 2] [--server URI] [--json FILE]
//
// Without --server it starts the kvstashd built alongside it on a free loopback port. The
// paged cache is in host memory (the CPU copies run); kernel bandwidth on a GPU is
// kvstash_cuda_bench's job.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/process.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "kvstash/paged.h"

namespace kvstash::bench {
namespace {

struct Flags {
  std::string model = "llama3-8b", layout = "vllm_nhd", server, json;
  std::string kvstashd = KVSTASH_BENCH_KVSTASHD;
  int chunks = 8, rounds = 3, depth = 2;
};

bool Parse(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (has && (a == "--model" || a == "--layout" || a == "--server" || a == "--json" ||
                a == "--kvstashd")) {
      std::string* s = a == "--model"    ? &f->model
                       : a == "--layout" ? &f->layout
                       : a == "--server" ? &f->server
                       : a == "--json"   ? &f->json
                                         : &f->kvstashd;
      *s = argv[++i];
    } else if (has && (a == "--chunks" || a == "--rounds" || a == "--depth")) {
      int* n = a == "--chunks" ? &f->chunks : a == "--rounds" ? &f->rounds : &f->depth;
      *n = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--model llama3-8b|llama2-7b] [--layout KIND] [--chunks N] "
                   "[--rounds N] [--depth N] [--server URI] [--json FILE]\n",
                   argv[0]);
      return false;
    }
  }
  return f->chunks > 0 && f->rounds > 0 && f->depth > 0;
}

// Starts kvstashd on a free port; returns its grpc:// URI.
absl::StatusOr<std::string> StartDaemon(const Flags& f, const ScratchDir& dir, int64_t bytes,
                                        std::unique_ptr<ChildProcess>* child) {
  const std::string ready = dir.path() + "/ready";
  auto c = ChildProcess::Spawn(
      "kvstashd",
      {f.kvstashd, "--listen", "127.0.0.1:0", "--ready_file", ready, "--set",
       "data_dir=" + dir.path() + "/data", "--set", "storage.nvme.enabled=false", "--set",
       absl::StrCat("storage.dram.capacity_bytes=", bytes)},
      dir.path() + "/kvstashd.log");
  if (!c.ok()) return c.status();
  *child = std::move(*c);
  absl::StatusOr<ReadyInfo> info = WaitForKvstashdReady(ready, **child, 20000);
  if (!info.ok()) return info.status();
  return "grpc://" + info->grpc;
}

double Seconds(const std::function<absl::Status()>& fn, absl::Status* status) {
  const auto t0 = std::chrono::steady_clock::now();
  *status = fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Row {
  std::string op;
  std::vector<double> gbps;
};

// The benchmark's model, cache (host memory, a few bytes set) and block table.
struct Setup {
  paged::PagedLayout layout;
  int64_t chunk_bytes = 0, total = 0;
  int32_t tokens = 0;
  std::vector<std::vector<uint8_t>> tensors;
  PagedCache cache;
  std::vector<int32_t> ids;
};

constexpr int32_t kChunkTokens = 256;

bool MakeSetup(const Flags& f, Setup* s) {
  paged::PagedLayout& l = s->layout;
  l = {paged::LayoutKind::kVllmNhd, 32, 0, 16, f.model == "llama2-7b" ? 32 : 8, 128, 2};
  if (!paged::ParseLayoutKind(f.layout, &l.kind) || l.kind == paged::LayoutKind::kMla ||
      l.is_view()) {
    std::fprintf(stderr, "unsupported layout %s\n", f.layout.c_str());
    return false;
  }
  s->tokens = f.chunks * kChunkTokens;
  l.num_blocks = 2 * s->tokens / l.block_size;
  s->chunk_bytes = paged::ChunkBytes(l, kChunkTokens, l.num_layers);
  s->total = s->chunk_bytes * f.chunks;
  s->cache.layout = l;
  s->cache.memory = PagedMemory::kHost;
  const bool pool = l.kind == paged::LayoutKind::kSglangPool;
  const size_t n = (l.kind == paged::LayoutKind::kCrossLayer ? 1 : l.num_layers) * (pool ? 2 : 1);
  std::mt19937_64 rng(1);
  s->tensors.resize(n);
  for (size_t i = 0; i < n; ++i) {
    s->tensors[i].resize(static_cast<size_t>(paged::LayerTensorBytes(l)));
    for (size_t j = 0; j < s->tensors[i].size(); j += 4096) s->tensors[i][j] = uint8_t(rng());
    (pool && i >= n / 2 ? s->cache.v_layers : s->cache.layers).push_back(s->tensors[i].data());
  }
  s->ids.resize(static_cast<size_t>(l.num_blocks));
  std::iota(s->ids.begin(), s->ids.end(), 0);
  std::shuffle(s->ids.begin(), s->ids.end(), rng);
  return true;
}

Namespace SpecOf(const Flags& f, const paged::PagedLayout& l) {
  Namespace spec;
  spec.model_id = "bench/" + f.model;
  spec.num_layers = l.num_layers;
  spec.kv_heads = l.kv_heads;
  spec.head_dim = l.head_dim;
  spec.chunk_tokens = kChunkTokens;
  return spec;
}

// One round: each op on fresh keys, timed; GB/s appended to rows.
absl::Status RunRound(const Setup& s, const Namespace& spec, NamespaceHandle ns, Client& client,
                      PagedTransfer& xfer, int round, std::vector<Row>* rows) {
  const int chunks = static_cast<int>(s.total / s.chunk_bytes);
  std::vector<int32_t> toks(s.tokens), plain_toks(s.tokens);
  std::iota(toks.begin(), toks.end(), round * s.tokens * 7 + 1);
  for (size_t i = 0; i < toks.size(); ++i) plain_toks[i] = -toks[i];
  const std::vector<Key128> keys = KeyChain(spec).PrefixKeys(toks);
  const std::vector<Key128> plain_keys = KeyChain(spec).PrefixKeys(plain_toks);
  const PagedRequest req{keys, s.ids, 0, s.tokens};
  std::vector<uint8_t> flat(static_cast<size_t>(s.total), 7);  // contiguous baseline buffers
  std::vector<PutItem> puts(chunks);
  std::vector<GetItem> gets(chunks);
  for (int c = 0; c < chunks; ++c) {
    uint8_t* data = flat.data() + c * s.chunk_bytes;
    puts[c] = PutItem{plain_keys[c], data, size_t(s.chunk_bytes), uint32_t(kChunkTokens),
                      kChunkFormatLayerKvTokenV1};
    gets[c].key = plain_keys[c];
    gets[c].data = data;
    gets[c].capacity = size_t(s.chunk_bytes);
  }
  const std::function<absl::Status()> ops[] = {
      [&] { return xfer.PutPaged(req).status(); },
      [&] { return client.Put(ns, absl::MakeSpan(puts)); },
      [&] { return xfer.GetPaged(req).status(); },
      [&] { return xfer.GetPagedLayerwise(req)->Wait().status(); },
      [&] { return client.Get(ns, absl::MakeSpan(gets)); }};
  for (size_t i = 0; i < rows->size(); ++i) {
    absl::Status st;
    const double sec = Seconds(ops[i], &st);
    if (!st.ok()) return absl::Status(st.code(), (*rows)[i].op + ": " + std::string(st.message()));
    (*rows)[i].gbps.push_back(double(s.total) / sec / 1e9);
  }
  return absl::OkStatus();
}

void Report(const Flags& f, const Setup& s, const std::vector<Row>& rows) {
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("%s %s, %d chunks of %lld bytes, depth %d, host cache, median of %d rounds\n",
              f.model.c_str(), f.layout.c_str(), f.chunks, static_cast<long long>(s.chunk_bytes),
              f.depth, f.rounds);
  std::FILE* json = f.json.empty() ? nullptr : std::fopen(f.json.c_str(), "w");
  const double put_plain = median(rows[1].gbps), get_plain = median(rows[4].gbps);
  for (const Row& r : rows) {
    const double m = median(r.gbps);
    const double base = r.op.rfind("put", 0) == 0 ? put_plain : get_plain;
    std::printf("%-14s %8.3f GB/s %7.2fx of plain\n", r.op.c_str(), m, m / base);
    if (json) {
      std::fprintf(json,
                   "{\"op\":\"%s\",\"model\":\"%s\",\"layout\":\"%s\",\"gbps\":%.4f,"
                   "\"ratio_to_plain\":%.4f}\n",
                   r.op.c_str(), f.model.c_str(), f.layout.c_str(), m, m / base);
    }
  }
  if (json) std::fclose(json);
}

int Run(const Flags& f) {
  Setup s;
  if (!MakeSetup(f, &s)) return 2;
  auto dir = ScratchDir::Create("kvstash-paged-bench");
  if (!dir.ok()) return 1;
  std::unique_ptr<ChildProcess> daemon;
  absl::StatusOr<std::string> uri = f.server;
  if (f.server.empty()) {
    uri = StartDaemon(f, **dir, 3 * s.total * f.rounds + (int64_t{256} << 20), &daemon);
  }
  ClientOptions copts;
  copts.connections = 4;
  absl::StatusOr<std::unique_ptr<Client>> client =
      uri.ok() ? Client::Connect(*uri, copts) : uri.status();
  const Namespace spec = SpecOf(f, s.layout);
  absl::StatusOr<NamespaceHandle> ns =
      client.ok() ? (*client)->OpenNamespace(spec) : client.status();
  PagedOptions popts;
  popts.pipeline_depth = f.depth;
  absl::StatusOr<std::unique_ptr<PagedTransfer>> xfer =
      ns.ok() ? PagedTransfer::Create(client->get(), *ns, s.cache, popts) : ns.status();
  std::vector<Row> rows = {{"put_paged", {}},
                           {"put_plain", {}},
                           {"get_paged", {}},
                           {"get_layerwise", {}},
                           {"get_plain", {}}};
  absl::Status st = xfer.status();
  for (int round = 0; st.ok() && round < f.rounds; ++round) {
    st = RunRound(s, spec, *ns, **client, **xfer, round, &rows);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  Report(f, s, rows);
  return 0;
}

}  // namespace
}  // namespace kvstash::bench

int main(int argc, char** argv) {
  kvstash::bench::Flags f;
  if (!kvstash::bench::Parse(argc, argv, &f)) return 2;
  return kvstash::bench::Run(f);
}
