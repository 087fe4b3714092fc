// kvstash_client_loop: one C++ client cell (put or get of equal-sized chunks, or lookups of
// a prompt's keys, from N threads against a running kvstashd), the reference the Python
// client is measured against (bench/python_client_bench.py). Prints one JSON object:
//   {"op":"get","threads":4,"size":4194304,"calls":123,"seconds":1.0,"gbps":5.1}
//
//   kvstash_client_loop URI get|put SIZE_BYTES THREADS SECONDS [KEYS_PER_THREAD]
//   kvstash_client_loop URI lookup PROMPT_KEYS THREADS SECONDS
// Keys are thread-private; a get cell first puts its keys; a lookup cell first puts the
// first 90% of its prompt's keys as 4 KiB chunks, then looks up the whole prompt.
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

// What RunLoop measured: the calls made, the seconds they took, whether any failed.
struct LoopResult {
  long calls = 0;
  double seconds = 0;
  bool failed = false;
};

// Calls `call(thread, i)` (false: it failed) for i = 0, 1, ... from `threads` threads until
// `seconds` have passed.
template <typename Call>
LoopResult RunLoop(int threads, double seconds, Call call) {
  std::atomic<long> calls{0};
  std::atomic<bool> failed{false};
  const absl::Time start = absl::Now(), end = start + absl::Seconds(seconds);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; absl::Now() < end; ++i) {
        if (!call(t, i)) failed = true;
        calls.fetch_add(1);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  return {calls.load(), absl::ToDoubleSeconds(absl::Now() - start), failed.load()};
}

// Lookups of one prompt of `prompt` keys (90% present) from `threads` threads.
int LookupCell(kvstash::Client& client, const kvstash::NamespaceHandle& ns, int prompt, int threads,
               double seconds) {
  std::vector<kvstash::Key128> keys;
  for (int i = 0; i < prompt; ++i) keys.push_back(KeyOf(0xff, i));
  std::vector<uint8_t> chunk(4096, 7);
  std::vector<kvstash::PutItem> items(prompt * 9 / 10);
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].key = keys[i];
    items[i].data = chunk.data();
    items[i].size = chunk.size();
  }
  if (!client.Put(ns, absl::MakeSpan(items)).ok()) return Fail("fill failed");
  const LoopResult r = RunLoop(threads, seconds, [&](int, int) {
    absl::StatusOr<kvstash::LookupResult> hits = client.Lookup(ns, keys);
    return hits.ok() && hits->hit_count == items.size();
  });
  if (r.failed) return Fail("a lookup failed or missed");
  std::printf(
      "{\"op\":\"lookup\",\"threads\":%d,\"keys\":%d,\"calls\":%ld,\"seconds\":%.3f,"
      "\"calls_per_s\":%.1f}\n",
      threads, prompt, r.calls, r.seconds, static_cast<double>(r.calls) / r.seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    return Fail(
        "usage: URI get|put SIZE_BYTES THREADS SECONDS [KEYS_PER_THREAD]; URI lookup PROMPT_KEYS "
        "THREADS SECONDS");
  }
  const std::string uri = argv[1], op = argv[2];
  const size_t size = std::strtoull(argv[3], nullptr, 10);
  const int threads = std::atoi(argv[4]);
  const double seconds = std::atof(argv[5]);
  const int keys = argc > 6 ? std::atoi(argv[6]) : 8;
  if ((op != "get" && op != "put" && op != "lookup") || size == 0 || threads < 1 || keys < 1) {
    return Fail("bad args");
  }

  kvstash::ClientOptions options;
  options.connections = threads;
  auto client = kvstash::Client::Connect(uri, options);
  if (!client.ok()) return Fail(client.status().ToString());
  kvstash::Namespace spec;
  spec.model_id = "bench/client-loop";
  auto ns = (*client)->OpenNamespace(spec);
  if (!ns.ok()) return Fail(ns.status().ToString());
  if (op == "lookup" && size > 65536) return Fail("a prompt of at most 65536 keys (KeyOf)");
  if (op == "lookup") return LookupCell(**client, *ns, static_cast<int>(size), threads, seconds);

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

  const LoopResult r = RunLoop(threads, seconds, [&](int t, int i) {
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
    return s.ok();
  });
  if (r.failed) return Fail("a call failed");
  std::printf(
      "{\"op\":\"%s\",\"threads\":%d,\"size\":%zu,\"calls\":%ld,\"seconds\":%.3f,"
      "\"gbps\":%.4f}\n",
      op.c_str(), threads, size, r.calls, r.seconds,
      static_cast<double>(r.calls) * size / r.seconds / 1e9);
  return 0;
}
