// Many clients at once against one kvstashd, over every transport: each thread has its own
// Client (its own connection) and mixes puts, gets of its own and other threads' chunks,
// and lookups; or many threads share one Client.
// Payload bytes are a function of the key, so any thread can verify any chunk.
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "tests/daemon_fixture.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

constexpr int kClients = 16;

// Keys written so far by all threads, with their sizes. Thread-safe.
class Registry {
 public:
  void Add(const Key128& key, size_t size) {
    absl::MutexLock lock(&mu_);
    entries_.push_back({key, size});
  }
  // A random committed entry; false when none yet.
  bool Pick(std::mt19937_64& rng, Key128* key, size_t* size) {
    absl::MutexLock lock(&mu_);
    if (entries_.empty()) return false;
    const auto& e = entries_[rng() % entries_.size()];
    *key = e.first;
    *size = e.second;
    return true;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::pair<Key128, size_t>> entries_ ABSL_GUARDED_BY(mu_);
};

struct WorkerResult {
  std::string error;  // first failure, empty when none
  int puts = 0, gets = 0, lookups = 0;
};

// Fetches `key` and checks its size and every byte against the key's pattern.
absl::Status GetAndVerify(Client& client, NamespaceHandle ns, const Key128& key, size_t size,
                          std::vector<uint8_t>* buf) {
  GetItem item;
  absl::Status got = GetOne(client, ns, key, kMiB, buf, &item);
  if (!got.ok()) return got;
  if (!item.status.ok()) return item.status;
  if (item.size != size) return absl::InternalError(absl::StrCat("size ", item.size));
  const int64_t bad = FirstPatternMismatch(key, buf->data(), item.size);
  if (bad >= 0) return absl::InternalError(absl::StrCat("payload differs at byte ", bad));
  return absl::OkStatus();
}

// One round: put a fresh chunk, read it back, read someone else's, look up both.
absl::Status Round(Client& client, NamespaceHandle ns, bool read_other, std::mt19937_64& rng,
                   Registry* registry, WorkerResult* result) {
  std::uniform_int_distribution<size_t> size_dist(256 * kKiB, kMiB);
  Payload p;
  p.key = RandomKey(rng);
  p.bytes = PatternBytes(p.key, size_dist(rng));
  p.tokens = 16;
  if (absl::Status put = PutAll(client, ns, {p}); !put.ok()) return put;
  ++result->puts;
  registry->Add(p.key, p.bytes.size());

  Key128 other = p.key;
  size_t other_size = p.bytes.size();
  if (read_other) registry->Pick(rng, &other, &other_size);
  std::vector<uint8_t> buf;
  if (absl::Status s = GetAndVerify(client, ns, p.key, p.bytes.size(), &buf); !s.ok()) {
    return s;
  }
  if (absl::Status s = GetAndVerify(client, ns, other, other_size, &buf); !s.ok()) return s;
  result->gets += 2;
  auto hits = client.Lookup(ns, {p.key, other});
  if (!hits.ok()) return hits.status();
  ++result->lookups;
  if (hits->hit_count != 2) return absl::InternalError(absl::StrCat("hit ", hits->hit_count));
  return absl::OkStatus();
}

class ConcurrencyTest : public TransportFixture {
 protected:
  // Room for everything written, so every chunk must stay readable.
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartDaemonOverParam({"storage.dram.capacity_bytes=512MiB"}));
  }

  // One client's rounds, over a connection of its own.
  void Worker(int id, int rounds, Registry* registry, WorkerResult* result) {
    std::mt19937_64 rng(1000 + id);
    auto fail = [&](const absl::Status& s) {
      result->error = absl::StrCat("client ", id, ": ", s.ToString());
    };
    auto client = ConnectOver(*daemon_, transport());
    if (!client.ok()) return fail(client.status());
    auto ns = (*client)->OpenNamespace(spec_);
    if (!ns.ok()) return fail(ns.status());
    for (int round = 0; round < rounds; ++round) {
      absl::Status s = Round(**client, *ns, round % 2 == 1, rng, registry, result);
      if (!s.ok()) return fail(s);
    }
  }
};

TEST_P(ConcurrencyTest, SixteenClientsMixedTraffic) {
  const int rounds = kUnderAsan ? 6 : 12;
  Registry registry;
  std::vector<WorkerResult> results(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] { Worker(i, rounds, &registry, &results[i]); });
  }
  for (std::thread& t : threads) t.join();

  int puts = 0, gets = 0, lookups = 0;
  for (const WorkerResult& r : results) {
    EXPECT_EQ(r.error, "");
    puts += r.puts;
    gets += r.gets;
    lookups += r.lookups;
  }
  EXPECT_EQ(puts, kClients * rounds);
  EXPECT_EQ(gets, 2 * kClients * rounds);

  auto stats = client_->Stats(&ns_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->puts, static_cast<uint64_t>(puts));
  EXPECT_EQ(stats->chunks, static_cast<uint64_t>(puts));
  EXPECT_EQ(stats->hits, static_cast<uint64_t>(gets));
  EXPECT_EQ(stats->evictions, 0u);
  EXPECT_EQ(stats->lookups, static_cast<uint64_t>(lookups));
}

TEST_P(ConcurrencyTest, OneClientSharedByManyThreads) {
  ClientOptions client_options;
  client_options.connections = 2;
  std::unique_ptr<Client> client = NewClient(client_options);
  ASSERT_NE(client, nullptr);
  auto ns = client->OpenNamespace(spec_);
  ASSERT_TRUE(ns.ok()) << ns.status();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<uint8_t> buf;
      for (int i = 0; i < 8; ++i) {
        Payload p;
        p.key = RandomKey(rng);
        p.bytes = PatternBytes(p.key, 300 * kKiB + t * 4099 + i);
        GetItem item;
        if (!PutAll(*client, *ns, {p}).ok() ||
            !GetOne(*client, *ns, p.key, p.bytes.size(), &buf, &item).ok() || !item.status.ok() ||
            buf != p.bytes) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, ConcurrencyTest, ::testing::ValuesIn(AllTransports()),
                         TransportTestName);

}  // namespace
}  // namespace kvstash::testing
