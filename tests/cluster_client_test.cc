// The cluster client against three real daemons named by a static:// list, over gRPC and
// UCX: chunks put through one client are found by another, lookups spanning members count
// the right leading chunks, and a member killed under load turns its keys into misses
// (never wrong bytes, never call errors) while its breaker keeps calls away from it, and a
// stopped member comes back through the breaker's probe.
#include "client/cluster_client.h"

#include <signal.h>

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/cluster_fake.h"
#include "cluster/member_source.h"
#include "cluster/placement.h"
#include "gtest/gtest.h"
#include "tests/daemon_fixture.h"
#include "tests/daemon_process.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

constexpr int kMembers = 3;

using client_internal::HandSource;

constexpr size_t kChunkBytes = 16 * kKiB;

// Gets every key of `keys` through `client`: each must come back with the bytes put.
void ExpectAllFetched(Client& client, NamespaceHandle ns, const std::vector<Key128>& keys) {
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  ASSERT_TRUE(GetMany(client, ns, keys, kChunkBytes, &bufs, &items).ok());
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_TRUE(items[i].status.ok()) << i << ": " << items[i].status;
    EXPECT_EQ(FirstPatternMismatch(keys[i], bufs[i].data(), items[i].size), -1);
  }
}

class ClusterClientTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    std::vector<std::string> addresses;
    for (int i = 0; i < kMembers; ++i) {
      DaemonOptions options;
      options.set = DaemonSettingsFor(GetParam());
      options.set.push_back("storage.dram.capacity_bytes=128MiB");
      auto daemon = DaemonProcess::Start(options);
      ASSERT_TRUE(daemon.ok()) << daemon.status();
      addresses.push_back(AddressFor(**daemon, GetParam()));
      daemons_.push_back(*std::move(daemon));
    }
    uri_ = absl::StrCat("static://", absl::StrJoin(addresses, ","));
    spec_ = TestNamespace(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  ClientOptions Options() const {
    ClientOptions options;
    options.ucx_tls = UcxTls(GetParam());
    options.cluster.transport = GetParam() == Transport::kGrpc ? "grpc" : "ucx";
    options.cluster.breaker_failures = 2;
    // Generous for sanitizer builds: a slow member must not read as a dead one here.
    options.cluster.node_deadline_ms = 10000;
    // Long enough that no probe goes out while a test runs: calls to a dead member stop.
    options.cluster.breaker_open_ms = 600000;
    return options;
  }

  // A cluster client with spec_ opened; fails the test on error.
  std::unique_ptr<Client> Connect(NamespaceHandle* ns) {
    auto client = ConnectClient(uri_, Options());
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return nullptr;
    auto handle = (*client)->OpenNamespace(spec_);
    EXPECT_TRUE(handle.ok()) << handle.status();
    if (handle.ok()) *ns = *handle;
    return *std::move(client);
  }

  // The placement every cluster client of this cluster computes (static members are
  // id'd by their address).
  cluster::Placement PlacementOf(Client& client) {
    auto status = client.Cluster();
    EXPECT_TRUE(status.ok()) << status.status();
    std::vector<cluster::Member> members;
    if (status.ok()) {
      for (const ClusterMemberStatus& m : status->members) members.push_back({.id = m.id});
    }
    return cluster::Placement(members);
  }

  cluster::Member MemberOf(int d) const {
    cluster::Member m;
    m.id = AddressFor(*daemons_[d], GetParam());
    m.grpc_address = m.id;
    m.ucx_address = m.id;
    return m;
  }

  // A cluster client over the first `members` daemons whose member set the test changes
  // through *source.
  std::unique_ptr<Client> ConnectSettable(int members, ClientOptions options, HandSource** source,
                                          NamespaceHandle* ns) {
    std::vector<cluster::Member> set;
    for (int d = 0; d < members; ++d) set.push_back(MemberOf(d));
    auto owned = std::make_unique<HandSource>(set);
    *source = owned.get();
    auto client = client_internal::ClusterClient::Create(std::move(owned), options);
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return nullptr;
    auto handle = (*client)->OpenNamespace(spec_);
    EXPECT_TRUE(handle.ok()) << handle.status();
    if (handle.ok()) *ns = *handle;
    return *std::move(client);
  }

  std::vector<std::unique_ptr<DaemonProcess>> daemons_;
  std::string uri_;
  Namespace spec_;
};

std::vector<Payload> Chunks(std::mt19937_64& rng, int count) {
  std::vector<Payload> out(count);
  for (Payload& p : out) {
    p.key = RandomKey(rng);
    p.bytes = PatternBytes(p.key, kChunkBytes);
    p.tokens = 16;
  }
  return out;
}

std::vector<Key128> KeysOf(const std::vector<Payload>& payloads) {
  std::vector<Key128> keys;
  for (const Payload& p : payloads) keys.push_back(p.key);
  return keys;
}

TEST_P(ClusterClientTest, PutThroughOneClientFoundByAnother) {
  NamespaceHandle ns;
  std::unique_ptr<Client> writer = Connect(&ns);
  std::unique_ptr<Client> reader = Connect(&ns);
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(reader, nullptr);
  std::mt19937_64 rng(1);
  std::vector<Payload> chunks = Chunks(rng, 90);
  ASSERT_TRUE(PutAll(*writer, ns, chunks).ok());

  const std::vector<Key128> keys = KeysOf(chunks);
  auto hits = reader->Lookup(ns, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, keys.size());
  ExpectAllFetched(*reader, ns, keys);
  auto exists = reader->Exists(ns, keys);
  ASSERT_TRUE(exists.ok());
  for (ChunkTier t : *exists) EXPECT_NE(t, ChunkTier::kNone);

  // Every chunk went to its owner, and only there.
  cluster::Placement placement = PlacementOf(*reader);
  ASSERT_EQ(placement.size(), static_cast<size_t>(kMembers));
  for (int d = 0; d < kMembers; ++d) {
    auto direct = ConnectOver(*daemons_[d], GetParam());
    ASSERT_TRUE(direct.ok()) << direct.status();
    ASSERT_TRUE((*direct)->OpenNamespace(spec_).ok());
    auto tiers = (*direct)->Exists(ns, keys);
    ASSERT_TRUE(tiers.ok());
    const int index = placement.IndexOf(AddressFor(*daemons_[d], GetParam()));
    ASSERT_GE(index, 0);
    int owned = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      const bool owner = placement.Owner(keys[i]) == static_cast<uint32_t>(index);
      owned += owner;
      EXPECT_EQ((*tiers)[i] != ChunkTier::kNone, owner) << "member " << d << " key " << i;
    }
    EXPECT_GT(owned, 0) << "member " << d << " owns none of 90 keys";
  }
  auto stats = reader->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->chunks, keys.size());
}

TEST_P(ClusterClientTest, LookupSpanningMembersCountsLeadingChunks) {
  NamespaceHandle ns;
  std::unique_ptr<Client> client = Connect(&ns);
  ASSERT_NE(client, nullptr);
  std::mt19937_64 rng(2);
  std::vector<Payload> chunks = Chunks(rng, 60);
  const std::vector<Key128> keys = KeysOf(chunks);
  // Chunk 41 is never stored: the prefix ends there whichever members hold the rest.
  std::vector<Payload> stored = chunks;
  stored.erase(stored.begin() + 41);
  ASSERT_TRUE(PutAll(*client, ns, stored).ok());

  auto hits = client->Lookup(ns, keys, /*lease_ms=*/30000);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 41u);
  EXPECT_EQ(hits->tiers.size(), 41u);
  EXPECT_NE(hits->lease_id, 0u);
  std::vector<Key128> leased(keys.begin(), keys.begin() + 41);
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  ASSERT_TRUE(GetMany(*client, ns, leased, kChunkBytes, &bufs, &items, hits->lease_id).ok());
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_TRUE(items[i].status.ok()) << i << ": " << items[i].status;
    EXPECT_EQ(FirstPatternMismatch(leased[i], bufs[i].data(), items[i].size), -1);
  }

  std::vector<Key128> from_missing(keys.begin() + 41, keys.end());
  hits = client->Lookup(ns, from_missing);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(hits->hit_count, 0u);
  std::vector<Key128> after_missing(keys.begin() + 42, keys.end());
  hits = client->Lookup(ns, after_missing);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(hits->hit_count, after_missing.size());
}

TEST_P(ClusterClientTest, KilledMemberTurnsIntoMissesUnderLoad) {
  NamespaceHandle ns;
  std::unique_ptr<Client> client = Connect(&ns);
  ASSERT_NE(client, nullptr);
  cluster::Placement placement = PlacementOf(*client);
  const int victim = placement.IndexOf(AddressFor(*daemons_[1], GetParam()));
  ASSERT_GE(victim, 0);

  // Writers and readers in a loop; every Get result is checked against its key's pattern.
  std::atomic<bool> stop{false};
  std::atomic<int> call_errors{0}, wrong_bytes{0}, rounds{0};
  std::atomic<int> victim_hits_after_kill{0};
  std::atomic<bool> killed{false};
  std::thread load([&] {
    std::mt19937_64 rng(3);
    while (!stop.load()) {
      std::vector<Payload> chunks = Chunks(rng, 12);
      std::vector<PutItem> puts;
      for (const Payload& p : chunks) puts.push_back(p.AsPutItem());
      const bool after_kill = killed.load();
      if (!client->Put(ns, absl::MakeSpan(puts)).ok()) ++call_errors;
      std::vector<std::vector<uint8_t>> bufs;
      std::vector<GetItem> items;
      if (!GetMany(*client, ns, KeysOf(chunks), kChunkBytes, &bufs, &items).ok()) ++call_errors;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].status.ok()) continue;
        if (FirstPatternMismatch(chunks[i].key, bufs[i].data(), items[i].size) != -1) {
          ++wrong_bytes;
        }
        if (after_kill && placement.Owner(chunks[i].key) == static_cast<uint32_t>(victim)) {
          ++victim_hits_after_kill;
        }
      }
      ++rounds;
    }
  });
  ASSERT_TRUE(PollUntil([&] { return rounds.load() >= 5; }, absl::Seconds(60)));
  daemons_[1]->Kill();  // SIGKILL
  killed = true;
  const int at_kill = rounds.load();
  ASSERT_TRUE(PollUntil([&] { return rounds.load() >= at_kill + 20; }, absl::Seconds(120)));
  stop = true;
  load.join();
  EXPECT_EQ(call_errors.load(), 0);
  EXPECT_EQ(wrong_bytes.load(), 0);
  EXPECT_EQ(victim_hits_after_kill.load(), 0);

  // The breaker is open: more calls leave the dead member alone.
  auto before = client->Cluster();
  ASSERT_TRUE(before.ok());
  const ClusterMemberStatus& dead = before->members[victim];
  EXPECT_TRUE(dead.breaker_open);
  EXPECT_FALSE(dead.connected);
  EXPECT_GT(dead.call_errors, 0u);
  std::mt19937_64 rng(4);
  std::vector<Payload> chunks = Chunks(rng, 30);
  std::vector<PutItem> puts;
  for (const Payload& p : chunks) puts.push_back(p.AsPutItem());
  ASSERT_TRUE(client->Put(ns, absl::MakeSpan(puts)).ok());
  const std::vector<Key128> keys = KeysOf(chunks);
  auto hits = client->Lookup(ns, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  size_t first_dead = keys.size();
  for (size_t i = 0; i < keys.size(); ++i) {
    const bool on_victim = placement.Owner(keys[i]) == static_cast<uint32_t>(victim);
    EXPECT_EQ(puts[i].status.ok(), !on_victim) << i << ": " << puts[i].status;
    if (on_victim && first_dead == keys.size()) first_dead = i;
  }
  EXPECT_EQ(hits->hit_count, first_dead);
  auto after = client->Cluster();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->members[victim].calls, dead.calls);
  EXPECT_TRUE(client->Health().ok());
  EXPECT_TRUE(client->Health()->serving);
}

TEST_P(ClusterClientTest, JoiningMemberTakesOverThroughHandOverAndReadRepair) {
  ClientOptions with = Options();
  with.cluster.handover_ms = 600000;
  ClientOptions without = Options();
  without.cluster.handover_ms = 0;
  HandSource* source_with = nullptr;
  HandSource* source_without = nullptr;
  NamespaceHandle ns;
  std::unique_ptr<Client> handing = ConnectSettable(2, with, &source_with, &ns);
  std::unique_ptr<Client> plain = ConnectSettable(2, without, &source_without, &ns);
  ASSERT_NE(handing, nullptr);
  ASSERT_NE(plain, nullptr);
  std::mt19937_64 rng(5);
  std::vector<Payload> chunks = Chunks(rng, 90);
  const std::vector<Key128> keys = KeysOf(chunks);
  ASSERT_TRUE(PutAll(*handing, ns, chunks).ok());

  std::vector<cluster::Member> three = {MemberOf(0), MemberOf(1), MemberOf(2)};
  source_with->Set(three);
  source_without->Set(three);
  cluster::Placement placement(three);
  const int joined = placement.IndexOf(MemberOf(2).id);
  std::vector<Key128> moved;
  size_t first_moved = keys.size();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (placement.Owner(keys[i]) != static_cast<uint32_t>(joined)) continue;
    moved.push_back(keys[i]);
    first_moved = std::min(first_moved, i);
  }
  ASSERT_FALSE(moved.empty());

  // Without hand-over the moved keys are misses on their new owner.
  auto hits = plain->Lookup(ns, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, first_moved);
  // With it, they are found on their previous owner, and fetched from there.
  hits = handing->Lookup(ns, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, keys.size());
  EXPECT_GT(handing->Cluster()->keys_moved, 0u);
  EXPECT_EQ(handing->Cluster()->member_set_changes, 1u);
  ExpectAllFetched(*handing, ns, keys);
  // The Get copied them to the new owner: now every client finds them there.
  EXPECT_TRUE(PollUntil(
      [&] {
        auto h = plain->Lookup(ns, keys);
        return h.ok() && h->hit_count == keys.size();
      },
      absl::Seconds(30)));
}

TEST_P(ClusterClientTest, HotChunksSurviveTheirOwner) {
  ClientOptions options = Options();
  options.cluster.replicas = 2;
  HandSource* source = nullptr;
  NamespaceHandle ns;
  std::unique_ptr<Client> client = ConnectSettable(kMembers, options, &source, &ns);
  ASSERT_NE(client, nullptr);
  std::mt19937_64 rng(6);
  std::vector<Payload> chunks = Chunks(rng, 30);
  std::vector<PutItem> puts;
  for (const Payload& p : chunks) {
    puts.push_back(p.AsPutItem());
    puts.back().hints.priority = Priority::kHigh;
  }
  ASSERT_TRUE(client->Put(ns, absl::MakeSpan(puts)).ok());
  for (const PutItem& p : puts) ASSERT_TRUE(p.status.ok()) << p.status;
  cluster::Placement placement(source->Current());
  int owned_by_victim = 0;
  for (const Payload& p : chunks) {
    owned_by_victim +=
        placement.Owner(p.key) == static_cast<uint32_t>(placement.IndexOf(MemberOf(0).id));
  }
  ASSERT_GT(owned_by_victim, 0);
  daemons_[0]->Kill();

  const std::vector<Key128> keys = KeysOf(chunks);
  auto hits = client->Lookup(ns, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, keys.size());
  ExpectAllFetched(*client, ns, keys);
}

TEST_P(ClusterClientTest, ConcurrentCallsWhileTheMemberSetChanges) {
  ClientOptions options = Options();
  options.cluster.handover_ms = 600000;
  options.cluster.replicas = 2;
  options.cluster.hot_fetches = 2;
  HandSource* source = nullptr;
  NamespaceHandle ns;
  std::unique_ptr<Client> client = ConnectSettable(2, options, &source, &ns);
  ASSERT_NE(client, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> call_errors{0}, wrong_bytes{0}, rounds{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      while (!stop.load()) {
        std::vector<Payload> chunks = Chunks(rng, 8);
        std::vector<PutItem> puts;
        for (const Payload& p : chunks) {
          puts.push_back(p.AsPutItem());
          puts.back().hints.priority = t % 2 == 0 ? Priority::kHigh : Priority::kNormal;
        }
        if (!client->Put(ns, absl::MakeSpan(puts)).ok()) ++call_errors;
        const std::vector<Key128> keys = KeysOf(chunks);
        auto hits = client->Lookup(ns, keys, /*lease_ms=*/10000);
        if (!hits.ok()) ++call_errors;
        std::vector<std::vector<uint8_t>> bufs;
        std::vector<GetItem> items;
        const uint64_t lease = hits.ok() ? hits->lease_id : 0;
        for (int repeat = 0; repeat < 2; ++repeat) {
          if (!GetMany(*client, ns, keys, kChunkBytes, &bufs, &items, lease).ok()) ++call_errors;
          for (size_t i = 0; i < items.size(); ++i) {
            if (items[i].status.ok() &&
                FirstPatternMismatch(keys[i], bufs[i].data(), items[i].size) != -1) {
              ++wrong_bytes;
            }
          }
        }
        if (!client->Exists(ns, keys).ok() || !client->Stats().ok()) ++call_errors;
        ++rounds;
      }
    });
  }
  for (int change = 0; change < 10; ++change) {
    const int at = rounds.load();
    ASSERT_TRUE(PollUntil([&] { return rounds.load() >= at + 4; }, absl::Seconds(60)));
    std::vector<cluster::Member> set = {MemberOf(0), MemberOf(1)};
    if (change % 2 == 0) set.push_back(MemberOf(2));
    source->Set(set);
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(call_errors.load(), 0);
  EXPECT_EQ(wrong_bytes.load(), 0);
  EXPECT_EQ(client->Cluster()->member_set_changes, 10u);
}

// The breaker end to end: a stopped member opens it (its keys are misses at once), and
// after breaker_open_ms a probe call finds it back and closes it.
TEST_P(ClusterClientTest, BreakerProbeBringsAStoppedMemberBack) {
  ClientOptions options = Options();
  options.cluster.node_deadline_ms = 500;
  options.cluster.breaker_open_ms = 200;
  HandSource* source = nullptr;
  NamespaceHandle ns;
  std::unique_ptr<Client> client = ConnectSettable(1, options, &source, &ns);
  ASSERT_NE(client, nullptr);
  std::mt19937_64 rng(11);
  std::vector<Payload> chunks = Chunks(rng, 4);
  ASSERT_TRUE(PutAll(*client, ns, chunks).ok());
  const std::vector<Key128> keys = KeysOf(chunks);

  ASSERT_TRUE(daemons_[0]->Signal(SIGSTOP).ok());
  // Lookups that time out on the stopped member are misses, not errors, and open its breaker.
  while (!client->Cluster()->members[0].breaker_open) {
    auto hits = client->Lookup(ns, keys);
    ASSERT_TRUE(hits.ok()) << hits.status();
  }
  auto hits = client->Lookup(ns, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 0u);
  ASSERT_TRUE(daemons_[0]->Signal(SIGCONT).ok());
  // Misses while open; then a probe goes out and, the member answering, closes it.
  for (;;) {
    auto hits = client->Lookup(ns, keys);
    ASSERT_TRUE(hits.ok()) << hits.status();
    if (hits->hit_count == keys.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(client->Cluster()->members[0].breaker_open);
  ExpectAllFetched(*client, ns, keys);
}

// A member whose address answers as something else (here its daemon's metrics endpoint) is
// an unreachable member, not a refusal every member would share: the others keep serving.
TEST_P(ClusterClientTest, MemberAddressOfAnotherServiceIsAnUnreachableMember) {
  HandSource* source = nullptr;
  NamespaceHandle ns;
  std::unique_ptr<Client> client = ConnectSettable(2, Options(), &source, &ns);
  ASSERT_NE(client, nullptr);
  std::vector<cluster::Member> set = {MemberOf(0), MemberOf(1), MemberOf(2)};
  set[2].grpc_address = set[2].ucx_address = daemons_[2]->ready().metrics;
  source->Set(set);
  std::mt19937_64 rng(11);
  std::vector<Payload> chunks = Chunks(rng, 60);
  std::vector<PutItem> puts;
  for (const Payload& p : chunks) puts.push_back(p.AsPutItem());
  ASSERT_TRUE(client->Put(ns, absl::MakeSpan(puts)).ok());
  cluster::Placement placement = PlacementOf(*client);
  const int wrong = placement.IndexOf(set[2].id);
  ASSERT_GE(wrong, 0);
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  ASSERT_TRUE(GetMany(*client, ns, KeysOf(chunks), kChunkBytes, &bufs, &items).ok());
  int served = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const bool owned_by_wrong = placement.Owner(chunks[i].key) == static_cast<uint32_t>(wrong);
    EXPECT_EQ(items[i].status.ok(), !owned_by_wrong) << i << ": " << items[i].status;
    if (items[i].status.ok()) {
      ++served;
      EXPECT_EQ(FirstPatternMismatch(chunks[i].key, bufs[i].data(), items[i].size), -1);
    }
  }
  EXPECT_GT(served, 0);
  auto after = client->Cluster();
  ASSERT_TRUE(after.ok()) << after.status();
  for (const ClusterMemberStatus& m : after->members) {
    EXPECT_EQ(m.connected, m.id != set[2].id) << m.id;
    if (m.id == set[2].id) EXPECT_GT(m.call_errors, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, ClusterClientTest,
                         ::testing::Values(Transport::kGrpc, Transport::kUcxTcp),
                         TransportTestName);

}  // namespace
}  // namespace kvstash::testing
