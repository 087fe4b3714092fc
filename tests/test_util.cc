#include "tests/test_util.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/bits.h"
#include "gtest/gtest.h"
#include "proto/namespace_spec.h"
#include "proto/status_map.h"
#include "tests/subprocess.h"

namespace kvstash::testing {
namespace {

uint64_t SeedOf(const Key128& key) {
  uint64_t a = 0, b = 0;
  memcpy(&a, key.data(), 8);
  memcpy(&b, key.data() + 8, 8);
  return SplitMix64(a ^ SplitMix64(b));
}

// Pattern word at word index `i`; the offset is mixed in so shifted data never matches.
uint64_t PatternWord(uint64_t seed, uint64_t i) { return SplitMix64(seed + i); }

}  // namespace

Namespace TestNamespace(const std::string& model_id, uint32_t chunk_tokens) {
  Namespace ns;
  ns.tenant = "integration";
  ns.model_id = model_id;
  ns.revision = "r1";
  ns.num_layers = 2;
  ns.kv_heads = 2;
  ns.head_dim = 64;
  ns.chunk_tokens = chunk_tokens;
  return ns;
}

Key128 RandomKey(std::mt19937_64& rng) {
  Key128 key;
  for (size_t i = 0; i < key.size(); i += 8) {
    const uint64_t r = rng();
    memcpy(key.data() + i, &r, 8);
  }
  return key;
}

void FillPattern(const Key128& key, uint8_t* data, size_t size) {
  const uint64_t seed = SeedOf(key);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    const uint64_t w = PatternWord(seed, i / 8);
    memcpy(data + i, &w, 8);
  }
  if (i < size) {
    const uint64_t w = PatternWord(seed, i / 8);
    memcpy(data + i, &w, size - i);
  }
}

std::vector<uint8_t> PatternBytes(const Key128& key, size_t size) {
  std::vector<uint8_t> out(size);
  FillPattern(key, out.data(), size);
  return out;
}

int64_t FirstPatternMismatch(const Key128& key, const uint8_t* data, size_t size) {
  const uint64_t seed = SeedOf(key);
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t w = PatternWord(seed, i / 8);
    const size_t n = std::min<size_t>(8, size - i);
    if (memcmp(data + i, &w, n) != 0) {
      const auto* expected = reinterpret_cast<const uint8_t*>(&w);
      for (size_t j = 0; j < n; ++j) {
        if (data[i + j] != expected[j]) return static_cast<int64_t>(i + j);
      }
    }
  }
  return -1;
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t size) {
  std::vector<uint8_t> out(size);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    const uint64_t r = rng();
    memcpy(out.data() + i, &r, 8);
  }
  for (; i < size; ++i) out[i] = static_cast<uint8_t>(rng());
  return out;
}

PutItem Payload::AsPutItem() const {
  PutItem item;
  item.key = key;
  item.data = bytes.data();
  item.size = bytes.size();
  item.tokens = tokens;
  item.format = format;
  return item;
}

absl::Status PutAll(Client& client, NamespaceHandle ns, const std::vector<Payload>& payloads) {
  std::vector<PutItem> items;
  items.reserve(payloads.size());
  for (const Payload& p : payloads) items.push_back(p.AsPutItem());
  absl::Status status = client.Put(ns, absl::MakeSpan(items));
  if (!status.ok()) return status;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].status.ok()) {
      return absl::Status(items[i].status.code(),
                          absl::StrCat("item ", i, ": ", items[i].status.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status GetOne(Client& client, NamespaceHandle ns, const Key128& key, size_t capacity,
                    std::vector<uint8_t>* out, GetItem* item) {
  out->assign(capacity, 0);
  *item = GetItem();
  item->key = key;
  item->data = out->data();
  item->capacity = capacity;
  return client.Get(ns, absl::MakeSpan(item, 1));
}

absl::Status GetMany(Client& client, NamespaceHandle ns, const std::vector<Key128>& keys,
                     size_t capacity, std::vector<std::vector<uint8_t>>* bufs,
                     std::vector<GetItem>* items, uint64_t lease_id) {
  bufs->assign(keys.size(), std::vector<uint8_t>(capacity));
  items->assign(keys.size(), GetItem());
  for (size_t i = 0; i < keys.size(); ++i) {
    (*items)[i].key = keys[i];
    (*items)[i].data = (*bufs)[i].data();
    (*items)[i].capacity = capacity;
  }
  return client.Get(ns, absl::MakeSpan(*items), lease_id);
}

absl::StatusOr<std::unique_ptr<Client>> ConnectClient(const std::string& uri,
                                                      ClientOptions options) {
  if (kUnderAsan) {
    options.deadline_ms *= 3;
    options.connect_timeout_ms *= 3;
  }
  return Client::Connect(uri, options);
}

std::unique_ptr<v1::KvStash::Stub> RawStub(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A private channel per stub: tests that break connections must not share one.
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  return v1::KvStash::NewStub(
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

absl::StatusOr<std::string> RawRegister(v1::KvStash::Stub& stub, const Namespace& spec) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::RegisterNamespaceRequest req;
  *req.mutable_spec() = wire::NamespaceToProto(spec);
  v1::RegisterNamespaceResponse resp;
  grpc::Status status = stub.RegisterNamespace(&ctx, req, &resp);
  if (!status.ok()) return wire::FromGrpcStatus(status);
  return resp.namespace_id();
}

bool PollUntil(const std::function<bool()>& done, absl::Duration timeout, absl::Duration interval) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (done()) return true;
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(interval);
  }
}

absl::Status RunWithTimeout(std::function<absl::Status()> fn, absl::Duration timeout) {
  struct State {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::Status status ABSL_GUARDED_BY(mu);
  };
  auto state = std::make_shared<State>();
  std::thread([state, fn = std::move(fn)] {
    absl::Status s = fn();
    absl::MutexLock lock(&state->mu);
    state->status = std::move(s);
    state->done = true;
  }).detach();
  absl::MutexLock lock(&state->mu);
  if (!state->mu.AwaitWithTimeout(absl::Condition(&state->done), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("call still running after ", absl::FormatDuration(timeout)));
  }
  return state->status;
}

std::vector<Key128> PutFresh(Client& client, NamespaceHandle ns, std::mt19937_64& rng, int count,
                             size_t size, int batch) {
  std::vector<Key128> keys;
  for (int done = 0; done < count; done += batch) {
    std::vector<Payload> payloads;
    for (int i = done; i < std::min(count, done + batch); ++i) {
      Payload p;
      p.key = RandomKey(rng);
      p.bytes = PatternBytes(p.key, size);
      p.tokens = 16;
      payloads.push_back(std::move(p));
      keys.push_back(payloads.back().key);
    }
    absl::Status status = PutAll(client, ns, payloads);
    EXPECT_TRUE(status.ok()) << "batch at " << done << ": " << status;
    if (!status.ok()) break;
  }
  return keys;
}

absl::Status MakeTestCertificates(const std::string& dir) {
  absl::StatusOr<CommandResult> made =
      RunCommand({"/bin/sh", std::string(KVSTASH_SOURCE_DIR) + "/tests/tls_certs.sh", dir});
  if (!made.ok()) return made.status();
  if (!made->exit.exited || made->exit.code != 0) {
    return absl::InternalError(absl::StrCat("tls_certs.sh failed: ", made->output));
  }
  return absl::OkStatus();
}

}  // namespace kvstash::testing
