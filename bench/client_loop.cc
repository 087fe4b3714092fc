// kvstash_client_loop: one C++ client cell (put or get of equal-sized chunks from N threads
// against a running kvstashd), the reference the Python client is measured against
// (bench/python_client_bench.py). Prints one JSON object:
//   {"op":"get","threads":4,"size":4194304,"calls":123,"seconds":1.0,"gbps":5.1}
//
//   kvstash_client_loop URI get|put SIZE_BYTES THREADS SECONDS [KEYS_PER_THREAD]
// Keys are thread-private; a get cell first puts its keys.
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "kvstash/client.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "kvstash_client_loop: %s\n", what.c_str());
  return 1;
}

// Caller memory as numpy allocates large arrays (2 MiB aligned, madvise'd for huge pages),
// so both clients copy into the same kind of pages.
struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
std::unique_ptr<uint8_t, FreeDeleter> HugeBuffer(size_t size) {
  constexpr size_t kHuge = 2 << 20;
  const size_t rounded = (size + kHuge - 1) / kHuge * kHuge;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kHuge, rounded));
  if (p != nullptr) {
    madvise(p, rounded, MADV_HUGEPAGE);
    std::memset(p, 7, size);
  }
  return std::unique_ptr<uint8_t, FreeDeleter>(p);
}

kvstash::Key128 KeyOf(int thread, int i) {
  kvstash::Key128 k{};
  k[0] = static_cast<uint8_t>(thread);
  k[1] = static_cast<uint8_t>(i);
  k[2] = static_cast<uint8_t>(i >> 8);
  k[15] = 0x42;
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) return Fail("usage: URI get|put SIZE_BYTES THREADS SECONDS [KEYS_PER_THREAD]");
  const std::string uri = argv[1], op = argv[2];
  const size_t size = std::strtoull(argv[3], nullptr, 10);
  const int threads = std::atoi(argv[4]);
  const double seconds = std::atof(argv[5]);
  const int keys = argc > 6 ? std::atoi(argv[6]) : 8;
  if ((op != "get" && op != "put") || size == 0 || threads < 1 || keys < 1) return Fail("bad args");

  kvstash::ClientOptions options;
  options.connections = threads;
  auto client = kvstash::Client::Connect(uri, options);
  if (!client.ok()) return Fail(client.status().ToString());
  kvstash::Namespace spec;
  spec.model_id = "bench/client-loop";
  auto ns = (*client)->OpenNamespace(spec);
  if (!ns.ok()) return Fail(ns.status().ToString());

  std::vector<std::unique_ptr<uint8_t, FreeDeleter>> buffers;
  for (int t = 0; t < threads; ++t) {
    buffers.push_back(HugeBuffer(size));
    if (buffers.back() == nullptr) return Fail("out of memory");
  }
  for (int t = 0; t < threads && op == "get"; ++t) {
    for (int i = 0; i < keys; ++i) {
      std::vector<kvstash::PutItem> item(1);
      item[0].key = KeyOf(t, i);
      item[0].data = buffers[t].get();
      item[0].size = size;
      if (auto s = (*client)->Put(*ns, absl::MakeSpan(item)); !s.ok() || !item[0].status.ok()) {
        return Fail("fill failed");
      }
    }
  }

  std::atomic<long> calls{0};
  std::atomic<bool> failed{false};
  const absl::Time start = absl::Now(), end = start + absl::Seconds(seconds);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; absl::Now() < end; ++i) {
        absl::Status s;
        if (op == "get") {
          std::vector<kvstash::GetItem> item(1);
          item[0].key = KeyOf(t, i % keys);
          item[0].data = buffers[t].get();
          item[0].capacity = size;
          s = (*client)->Get(*ns, absl::MakeSpan(item));
          if (s.ok()) s = item[0].status;
        } else {
          std::vector<kvstash::PutItem> item(1);
          item[0].key = KeyOf(t, 1000 + i);  // fresh keys: each put stores the bytes
          item[0].data = buffers[t].get();
          item[0].size = size;
          s = (*client)->Put(*ns, absl::MakeSpan(item));
          if (s.ok()) s = item[0].status;
        }
        if (!s.ok()) failed = true;
        calls.fetch_add(1);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  if (failed) return Fail("a call failed");
  std::printf(
      "{\"op\":\"%s\",\"threads\":%d,\"size\":%zu,\"calls\":%ld,\"seconds\":%.3f,"
      "\"gbps\":%.4f}\n",
      op.c_str(), threads, size, calls.load(), elapsed,
      static_cast<double>(calls.load()) * size / elapsed / 1e9);
  return 0;
}
