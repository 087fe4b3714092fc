// The cluster client over in-process fake members: sub-requests split per member and
// merged back map to the right items; refusals, replicas, leases over two lookup rounds,
// hand-overs, pins, deletes, read-repair and the breaker's probe behave as
// client/README.md "Cluster" says.
#include "client/cluster_fake.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kvstash::client_internal {
namespace {

const NamespaceHandle kNs{};

ClientOptions Options(int replicas) {
  ClientOptions options;
  options.cluster.replicas = replicas;
  options.cluster.hot_fetches = 0;
  options.cluster.breaker_failures = 2;
  options.cluster.breaker_open_ms = 600000;
  return options;
}

Key128 K(int i) {
  Key128 k{};
  k[0] = static_cast<uint8_t>(i);
  k[1] = static_cast<uint8_t>(i >> 8);
  k[15] = 0x5a;
  return k;
}

std::string Bytes(const Key128& k) {
  return absl::StrCat("chunk-", k[0], "-", k[1], std::string(64 + k[0], 'x'));
}

// The first key (from `from` on) whose first `n` owners among `members` are `ids`.
Key128 KeyOwnedBy(const std::vector<cluster::Member>& members, std::vector<std::string> ids,
                  int from = 1000) {
  for (int i = from;; ++i) {
    if (FakeCluster::Owners(members, K(i), ids.size()) == ids) return K(i);
  }
}

void Store(FakeDaemon& d, const Key128& k) {
  absl::MutexLock lock(&d.mu);
  d.chunks[k] = Bytes(k);
}
bool Holds(FakeDaemon& d, const Key128& k) {
  absl::MutexLock lock(&d.mu);
  return d.chunks.contains(k);
}
bool Pinned(FakeDaemon& d, const Key128& k) {
  absl::MutexLock lock(&d.mu);
  return d.pinned.contains(k);
}
void Refuse(FakeDaemon& d, absl::Status s) {
  absl::MutexLock lock(&d.mu);
  d.refuse = std::move(s);
}

// Puts `keys` through `client` (hints.priority kHigh when `hot`).
absl::Status PutKeys(Client& client, const std::vector<Key128>& keys, bool hot,
                     std::vector<PutItem>* out = nullptr) {
  std::vector<std::string> bytes;
  for (const Key128& k : keys) bytes.push_back(Bytes(k));
  std::vector<PutItem> puts(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    puts[i].key = keys[i];
    puts[i].data = bytes[i].data();
    puts[i].size = bytes[i].size();
    if (hot) puts[i].hints.priority = Priority::kHigh;
  }
  absl::Status s = client.Put(kNs, absl::MakeSpan(puts));
  if (out != nullptr) *out = puts;
  return s;
}

// Gets `keys`; each item's status, and OK only with exactly its own bytes.
std::vector<absl::Status> GetKeys(Client& client, const std::vector<Key128>& keys,
                                  absl::Status* call, uint64_t lease_id = 0) {
  std::vector<std::string> bufs(keys.size(), std::string(512, '\0'));
  std::vector<GetItem> gets(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    gets[i].key = keys[i];
    gets[i].data = bufs[i].data();
    gets[i].capacity = bufs[i].size();
  }
  *call = client.Get(kNs, absl::MakeSpan(gets), lease_id);
  std::vector<absl::Status> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::Status s = gets[i].status;
    if (s.ok() && bufs[i].substr(0, gets[i].size) != Bytes(keys[i])) {
      s = absl::InternalError("wrong bytes");
    }
    out.push_back(s);
  }
  return out;
}

TEST(ClusterFakeTest, SplitAndMergedSubRequestsMapBackToTheirItems) {
  FakeCluster cluster(4);
  std::unique_ptr<Client> client = cluster.Connect(Options(1));
  ASSERT_NE(client, nullptr);
  std::vector<Key128> keys;
  for (int i = 0; i < 64; ++i) keys.push_back(K(i));
  ASSERT_TRUE(PutKeys(*client, keys, false).ok());
  // Key 40 is lost by its owner.
  {
    FakeDaemon& d = cluster.daemon(FakeCluster::Owners(cluster.members(), keys[40], 1)[0]);
    absl::MutexLock lock(&d.mu);
    d.chunks.erase(keys[40]);
  }
  auto hits = client->Lookup(kNs, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 40u);
  absl::Status call;
  std::vector<absl::Status> got = GetKeys(*client, keys, &call);
  ASSERT_TRUE(call.ok()) << call;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i == 40) {
      EXPECT_TRUE(absl::IsNotFound(got[i])) << got[i];
    } else {
      EXPECT_TRUE(got[i].ok()) << i << ": " << got[i];
    }
  }
  auto exists = client->Exists(kNs, keys);
  ASSERT_TRUE(exists.ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ((*exists)[i], i == 40 ? ChunkTier::kNone : ChunkTier::kDram) << i;
  }
}

TEST(ClusterFakeTest, OneMemberRefusingGivesMissesUnlessEveryMemberRefuses) {
  for (absl::Status refusal :
       {absl::ResourceExhaustedError("call limit"), absl::PermissionDeniedError("other token")}) {
    FakeCluster cluster(3);
    std::unique_ptr<Client> client = cluster.Connect(Options(1));
    ASSERT_NE(client, nullptr);
    std::vector<Key128> keys;
    for (int i = 0; i < 30; ++i) keys.push_back(K(i));
    ASSERT_TRUE(PutKeys(*client, keys, false).ok());
    const std::string refuser = FakeCluster::Owners(cluster.members(), keys[10], 1)[0];
    size_t first_refused = 0;
    while (FakeCluster::Owners(cluster.members(), keys[first_refused], 1)[0] != refuser) {
      ++first_refused;
    }
    Refuse(cluster.daemon(refuser), refusal);

    auto hits = client->Lookup(kNs, keys);
    ASSERT_TRUE(hits.ok()) << hits.status();
    EXPECT_EQ(hits->hit_count, first_refused);
    absl::Status call;
    std::vector<absl::Status> got = GetKeys(*client, keys, &call);
    ASSERT_TRUE(call.ok()) << call;
    std::vector<PutItem> puts;
    ASSERT_TRUE(PutKeys(*client, keys, false, &puts).ok());
    for (size_t i = 0; i < keys.size(); ++i) {
      const bool refused = FakeCluster::Owners(cluster.members(), keys[i], 1)[0] == refuser;
      EXPECT_EQ(absl::IsNotFound(got[i]), refused) << i << ": " << got[i];
      EXPECT_EQ(got[i].ok(), !refused) << i << ": " << got[i];
      EXPECT_EQ(puts[i].status.code(), refused ? refusal.code() : absl::StatusCode::kOk) << i;
    }
    auto exists = client->Exists(kNs, keys);
    EXPECT_TRUE(exists.ok()) << exists.status();
    // A refusal is an answer: the breaker stays closed.
    absl::StatusOr<ClusterStatus> status = client->Cluster();
    ASSERT_TRUE(status.ok()) << status.status();
    for (const ClusterMemberStatus& m : status->members) {
      EXPECT_FALSE(m.breaker_open) << m.id;
    }
    // Every member refuses: the engine learns why.
    for (int i = 0; i < 3; ++i) Refuse(cluster.daemon(i), refusal);
    EXPECT_EQ(client->Lookup(kNs, keys).status().code(), refusal.code());
    EXPECT_EQ(client->Put(kNs, absl::MakeSpan(puts)).code(), refusal.code());
  }
}

TEST(ClusterFakeTest, LookupAsksTheReplicaAfterAPlainMissAndGetRepairsTheOwner) {
  FakeCluster cluster(3);
  std::unique_ptr<Client> client = cluster.Connect(Options(2));
  ASSERT_NE(client, nullptr);
  const Key128 k = KeyOwnedBy(cluster.members(), {"m0", "m1"});
  // Stored on its replica only (put while its owner's breaker was open).
  Store(cluster.daemon("m1"), k);
  auto hits = client->Lookup(kNs, {k});
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 1u);
  absl::Status call;
  EXPECT_TRUE(GetKeys(*client, {k}, &call)[0].ok());
  client.reset();  // runs the background copies
  EXPECT_TRUE(Holds(cluster.daemon("m0"), k));
}

TEST(ClusterFakeTest, LeasesOfBothLookupRoundsEachGoWithTheKeysTheyCover) {
  FakeCluster cluster(3);
  std::unique_ptr<Client> client = cluster.Connect(Options(2));
  ASSERT_NE(client, nullptr);
  const std::vector<cluster::Member> members = cluster.members();
  const Key128 k0 = KeyOwnedBy(members, {"m0"});
  const Key128 k1 = KeyOwnedBy(members, {"m1", "m0"});
  const Key128 k2 = KeyOwnedBy(members, {"m0"}, 5000);
  // m0 holds all three; k1 only as its replica, so m0 is asked in two rounds.
  for (const Key128& k : {k0, k1, k2}) Store(cluster.daemon("m0"), k);
  auto hits = client->Lookup(kNs, {k0, k1, k2}, /*lease_ms=*/60000);
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_EQ(hits->hit_count, 3u);
  ASSERT_NE(hits->lease_id, 0u);
  absl::Status call;
  for (const absl::Status& s : GetKeys(*client, {k0, k1, k2}, &call, hits->lease_id)) {
    EXPECT_TRUE(s.ok()) << s;
  }
  FakeDaemon& m0 = cluster.daemon("m0");
  absl::MutexLock lock(&m0.mu);
  ASSERT_EQ(m0.leases.size(), 2u);
  absl::flat_hash_map<Key128, uint64_t> lease_of;
  for (const auto& [id, keys] : m0.leases) {
    for (const Key128& k : keys) lease_of[k] = id;
  }
  ASSERT_EQ(m0.gets.size(), 3u);
  for (const auto& [id, key] : m0.gets) EXPECT_EQ(id, lease_of[key]);
}

TEST(ClusterFakeTest, HandOverOutlivesARestartAndClearNamespaceReachesThePreviousOwner) {
  FakeCluster cluster(3);
  ClientOptions options = Options(1);
  options.cluster.handover_ms = 600000;
  std::unique_ptr<Client> client = cluster.Connect(options);
  ASSERT_NE(client, nullptr);
  const Key128 k = KeyOwnedBy(cluster.members(), {"m2"});
  ASSERT_TRUE(PutKeys(*client, {k}, false).ok());
  ASSERT_TRUE(Holds(cluster.daemon("m2"), k));
  cluster.source().Set({cluster.member(0), cluster.member(1)});  // m2 leaves
  EXPECT_EQ(client->Lookup(kNs, {k})->hit_count, 1u);
  cluster::Member restarted = cluster.member(0);
  restarted.started_unix_ms = 12345;
  cluster.source().Set({restarted, cluster.member(1)});  // same ids: no new hand-over
  EXPECT_EQ(client->Lookup(kNs, {k})->hit_count, 1u);
  auto cleared = client->ClearNamespace(kNs);
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  EXPECT_FALSE(Holds(cluster.daemon("m2"), k));
  EXPECT_EQ(client->Lookup(kNs, {k})->hit_count, 0u);
}

TEST(ClusterFakeTest, GetTriesTheNextReplicaAfterDataLoss) {
  FakeCluster cluster(3);
  std::unique_ptr<Client> client = cluster.Connect(Options(2));
  ASSERT_NE(client, nullptr);
  const Key128 k = KeyOwnedBy(cluster.members(), {"m1", "m2"});
  ASSERT_TRUE(PutKeys(*client, {k}, /*hot=*/true).ok());
  ASSERT_TRUE(Holds(cluster.daemon("m2"), k));
  {
    FakeDaemon& d = cluster.daemon("m1");
    absl::MutexLock lock(&d.mu);
    d.data_loss.insert(k);
  }
  absl::Status call;
  absl::Status got = GetKeys(*client, {k}, &call)[0];
  EXPECT_TRUE(call.ok()) << call;
  EXPECT_TRUE(got.ok()) << got;
}

TEST(ClusterFakeTest, PinReachesEveryCopyAndLeavesNothingPinnedOnQuota) {
  FakeCluster cluster(3);
  std::unique_ptr<Client> client = cluster.Connect(Options(2));
  ASSERT_NE(client, nullptr);
  const Key128 k = KeyOwnedBy(cluster.members(), {"m0", "m2"});
  ASSERT_TRUE(PutKeys(*client, {k}, /*hot=*/true).ok());
  auto pinned = client->Pin(kNs, {k}, true);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  EXPECT_EQ(*pinned, 1u);
  EXPECT_TRUE(Pinned(cluster.daemon("m0"), k));
  EXPECT_TRUE(Pinned(cluster.daemon("m2"), k));
  auto unpinned = client->Pin(kNs, {k}, false);
  ASSERT_TRUE(unpinned.ok()) << unpinned.status();
  EXPECT_EQ(*unpinned, 1u);
  EXPECT_FALSE(Pinned(cluster.daemon("m0"), k));
  EXPECT_FALSE(Pinned(cluster.daemon("m2"), k));
  {
    FakeDaemon& d = cluster.daemon("m2");
    absl::MutexLock lock(&d.mu);
    d.pin_quota_full = true;
  }
  EXPECT_TRUE(absl::IsResourceExhausted(client->Pin(kNs, {k}, true).status()));
  EXPECT_FALSE(Pinned(cluster.daemon("m0"), k));
}

TEST(ClusterFakeTest, DeleteCountsKeysNotCopies) {
  FakeCluster cluster(3);
  std::unique_ptr<Client> client = cluster.Connect(Options(2));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(PutKeys(*client, {K(1), K(2)}, /*hot=*/true).ok());
  auto deleted = client->Delete(kNs, {K(1), K(2), K(3)});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 2u);
  EXPECT_EQ(client->Lookup(kNs, {K(1)})->hit_count, 0u);
}

TEST(ClusterFakeTest, ReadRepairCopiesOnlyBytesThatMatchTheirChecksum) {
  FakeCluster cluster(3);
  std::unique_ptr<Client> client = cluster.Connect(Options(2));
  ASSERT_NE(client, nullptr);
  const Key128 good = KeyOwnedBy(cluster.members(), {"m0", "m1"});
  const Key128 bad = KeyOwnedBy(cluster.members(), {"m0", "m1"}, 9000);
  for (const Key128& k : {good, bad}) Store(cluster.daemon("m1"), k);
  {
    FakeDaemon& d = cluster.daemon("m1");
    absl::MutexLock lock(&d.mu);
    d.bad_checksum.insert(bad);
  }
  absl::Status call;
  GetKeys(*client, {good, bad}, &call);
  ASSERT_TRUE(call.ok()) << call;
  client.reset();  // runs the background copies
  EXPECT_TRUE(Holds(cluster.daemon("m0"), good));
  EXPECT_FALSE(Holds(cluster.daemon("m0"), bad));
}

TEST(ClusterFakeTest, BreakerProbeBringsAFailedMemberBack) {
  FakeCluster cluster(1);
  ClientOptions options = Options(1);
  options.cluster.breaker_open_ms = 50;
  std::unique_ptr<Client> client = cluster.Connect(options);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(PutKeys(*client, {K(1)}, false).ok());
  Refuse(cluster.daemon(0), absl::UnavailableError("down"));
  for (int i = 0; i < 2; ++i) EXPECT_EQ(client->Lookup(kNs, {K(1)})->hit_count, 0u);
  ASSERT_TRUE(client->Cluster()->members[0].breaker_open);
  Refuse(cluster.daemon(0), absl::OkStatus());
  const uint64_t calls = client->Cluster()->members[0].calls;
  // Misses without calls while open; once breaker_open_ms has passed, the next call is the
  // probe, and it succeeds.
  while (client->Lookup(kNs, {K(1)})->hit_count == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(client->Cluster()->members[0].calls, calls + 1);
  EXPECT_FALSE(client->Cluster()->members[0].breaker_open);
  EXPECT_EQ(client->Lookup(kNs, {K(1)})->hit_count, 1u);
}

TEST(ClusterFakeTest, AReplayedMemoryRangeAMemberRefusesDoesNotFailItsConnection) {
  FakeCluster cluster(2);
  std::unique_ptr<Client> client = cluster.Connect(Options(1));
  ASSERT_NE(client, nullptr);
  {
    FakeDaemon& d = cluster.daemon(0);
    absl::MutexLock lock(&d.mu);
    d.refuse_memory = true;
  }
  std::vector<char> arena(4096);
  // No member is connected yet: the range is kept and replayed as each connects.
  ASSERT_TRUE(client->RegisterMemory(arena.data(), arena.size()).ok());
  std::vector<Key128> keys;
  for (int i = 0; i < 16; ++i) keys.push_back(K(i));
  std::vector<PutItem> puts;
  ASSERT_TRUE(PutKeys(*client, keys, false, &puts).ok());
  for (const PutItem& p : puts) EXPECT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(client->Lookup(kNs, keys)->hit_count, keys.size());
  // Now connected: a member refusing a new range fails the call, and it is kept nowhere.
  std::vector<char> more(4096);
  EXPECT_TRUE(absl::IsInvalidArgument(client->RegisterMemory(more.data(), more.size())));
  EXPECT_TRUE(absl::IsNotFound(client->UnregisterMemory(more.data())));
  EXPECT_TRUE(client->UnregisterMemory(arena.data()).ok());
}

// Bad items are refused before any member is asked, as a single-daemon client refuses them.
TEST(ClusterFakeTest, BadItemsAreRefusedAsByOneDaemon) {
  FakeCluster cluster(2);
  std::unique_ptr<Client> client = cluster.Connect(Options(1));
  ASSERT_NE(client, nullptr);
  const std::string bytes = "x";
  std::vector<PutItem> puts(2);
  puts[0].key = K(1);
  puts[0].data = bytes.data();
  puts[0].size = bytes.size();
  puts[1].key = K(2);
  puts[1].data = bytes.data();  // size 0
  absl::Status s = client->Put(kNs, absl::MakeSpan(puts));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("PutItem 1: size is 0"), absl::string_view::npos) << s;
  EXPECT_FALSE(Holds(cluster.daemon(0), K(1)) || Holds(cluster.daemon(1), K(1)));
  std::vector<GetItem> gets(1);
  gets[0].key = K(1);
  gets[0].capacity = 16;  // data null
  s = client->Get(kNs, absl::MakeSpan(gets), 0);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("GetItem 0: data is null"), absl::string_view::npos) << s;
  EXPECT_TRUE(absl::IsInvalidArgument(client->RegisterMemory(nullptr, 16)));
}

TEST(ClusterFakeTest, OpenNamespaceWithNoMembersKeepsTheSpec) {
  FakeCluster cluster(0);
  std::unique_ptr<Client> client = cluster.Connect(Options(1));
  ASSERT_NE(client, nullptr);
  Namespace spec;
  spec.model_id = "fake";
  spec.chunk_tokens = 16;
  auto ns = client->OpenNamespace(spec);
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_EQ(ns->id, spec.Id());
}

}  // namespace
}  // namespace kvstash::client_internal
