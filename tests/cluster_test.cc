// The cluster mode end to end: a real etcd and real kvstashd members on loopback
// (ClusterFixture), reached through cluster clients (Client::Connect("etcd://...")).
// Chunks put through one client are found through another, over gRPC and UCX; a member
// killed with -9 under load turns exactly its share into misses, never into wrong bytes or
// failed calls, and clients stop calling it; restarted, it serves its NVMe chunks again; a
// fourth member takes over about a quarter of the keys while every key stays found; and
// the cluster serves on with its last member set while etcd is down and restarts.
// Every chunk's bytes derive from its key (PatternBytes), so any chunk served is checked.
// No timing thresholds: conditions are awaited with generous deadlines.
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cluster/placement.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "tests/cluster_fixture.h"
#include "tests/daemon_fixture.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

constexpr size_t kChunk = 16 * kKiB;

// What Gets of pattern chunks came back as.
struct GetTally {
  int hits = 0;         // the exact bytes
  int misses = 0;       // NOT_FOUND
  int wrong = 0;        // served, but not the bytes put under that key
  int item_errors = 0;  // any other per-item status
  int call_errors = 0;  // the call itself failed
  std::string first_error;

  void Add(const GetTally& o) {
    hits += o.hits;
    misses += o.misses;
    wrong += o.wrong;
    item_errors += o.item_errors;
    call_errors += o.call_errors;
    if (first_error.empty()) first_error = o.first_error;
  }
  std::string ToString() const {
    return absl::StrCat(hits, " hits, ", misses, " misses, ", wrong, " wrong, ", item_errors,
                        " item errors, ", call_errors, " call errors; first error: ", first_error);
  }
};

// Gets `keys` in one call; `found` (when given) gets, per key, whether it was a hit.
GetTally GetChecked(Client& client, NamespaceHandle ns, const std::vector<Key128>& keys,
                    std::vector<bool>* found = nullptr) {
  GetTally tally;
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  absl::Status call = GetMany(client, ns, keys, kChunk, &bufs, &items);
  if (found != nullptr) found->assign(keys.size(), false);
  if (!call.ok()) {
    tally.call_errors = 1;
    tally.first_error = call.ToString();
    return tally;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const GetItem& item = items[i];
    if (absl::IsNotFound(item.status)) {
      ++tally.misses;
    } else if (!item.status.ok()) {
      ++tally.item_errors;
      if (tally.first_error.empty()) tally.first_error = item.status.ToString();
    } else if (item.size != kChunk ||
               FirstPatternMismatch(keys[i], bufs[i].data(), item.size) != -1) {
      ++tally.wrong;
    } else {
      ++tally.hits;
      if (found != nullptr) (*found)[i] = true;
    }
  }
  return tally;
}

// Gets `keys` in batches of 32.
GetTally GetAllChecked(Client& client, NamespaceHandle ns, const std::vector<Key128>& keys,
                       std::vector<bool>* found = nullptr) {
  GetTally tally;
  if (found != nullptr) found->clear();
  for (size_t at = 0; at < keys.size(); at += 32) {
    std::vector<Key128> batch(keys.begin() + at, keys.begin() + std::min(keys.size(), at + 32));
    std::vector<bool> batch_found;
    tally.Add(GetChecked(client, ns, batch, &batch_found));
    if (found != nullptr) found->insert(found->end(), batch_found.begin(), batch_found.end());
  }
  return tally;
}

// The ids of the members `client` places chunks on now: in its member set, breaker closed.
std::vector<std::string> ServingIds(Client& client) {
  absl::StatusOr<ClusterStatus> status = client.Cluster();
  EXPECT_TRUE(status.ok()) << status.status();
  std::vector<std::string> ids;
  if (!status.ok()) return ids;
  for (const ClusterMemberStatus& m : status->members) {
    if (!m.breaker_open) ids.push_back(m.id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Waits until `client` places chunks on exactly `ids`.
bool AwaitServing(Client& client, const std::vector<std::string>& ids, absl::Duration timeout) {
  return PollUntil([&] { return ServingIds(client) == ids; }, timeout, absl::Milliseconds(50));
}

// The owner (member id) of each of `keys` over `members`.
std::vector<std::string> OwnersOf(const std::vector<cluster::Member>& members,
                                  const std::vector<Key128>& keys) {
  const cluster::Placement placement(members);
  std::vector<std::string> owners;
  for (const Key128& key : keys) owners.push_back(placement.members()[placement.Owner(key)].id);
  return owners;
}

class ClusterTest : public ClusterFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartCluster(ClusterFixtureOptions{}));
    if (IsSkipped()) return;
    ASSERT_NO_FATAL_FAILURE(Connect(&client_, &ns_, Transport::kGrpc));
  }

  // A cluster client over `transport` with the test's namespace open.
  void Connect(std::unique_ptr<Client>* client, NamespaceHandle* ns, Transport transport) {
    ClientOptions options;
    options.cluster.transport = transport == Transport::kGrpc ? "grpc" : "ucx";
    options.ucx_tls = UcxTls(transport);
    absl::StatusOr<std::unique_ptr<Client>> connected = ConnectCluster(options);
    ASSERT_TRUE(connected.ok()) << connected.status();
    *client = *std::move(connected);
    ASSERT_TRUE(AwaitServing(**client, LiveIds(), settle_timeout()))
        << "the client never saw every member";
    absl::StatusOr<NamespaceHandle> opened = (*client)->OpenNamespace(TestNamespace("cluster"));
    ASSERT_TRUE(opened.ok()) << opened.status();
    *ns = *opened;
  }

  std::vector<Key128> PutKeys(Client& client, NamespaceHandle ns, int count) {
    return PutFresh(client, ns, rng_, count, kChunk, 16);
  }

  // The registered member set, which must be readable.
  std::vector<cluster::Member> MemberSet() {
    absl::StatusOr<std::vector<cluster::Member>> members = Registered();
    EXPECT_TRUE(members.ok()) << members.status();
    return members.ok() ? *members : std::vector<cluster::Member>{};
  }

  std::mt19937_64 rng_{2828};
  std::unique_ptr<Client> client_;
  NamespaceHandle ns_;
};

class ClusterTransportTest : public ClusterTest, public ::testing::WithParamInterface<Transport> {};

TEST_P(ClusterTransportTest, ChunksPutThroughOneClientAreFoundByAnother) {
  std::unique_ptr<Client> writer, reader;
  NamespaceHandle writer_ns, reader_ns;
  ASSERT_NO_FATAL_FAILURE(Connect(&writer, &writer_ns, GetParam()));
  ASSERT_NO_FATAL_FAILURE(Connect(&reader, &reader_ns, GetParam()));
  const std::vector<Key128> keys = PutKeys(*writer, writer_ns, 240);
  const GetTally tally = GetAllChecked(*reader, reader_ns, keys);
  EXPECT_EQ(tally.hits, static_cast<int>(keys.size())) << tally.ToString();

  // Each chunk sits on the member placement names, and every member got a share.
  const std::vector<std::string> owners = OwnersOf(MemberSet(), keys);
  std::map<std::string, int> share;
  for (int i = 0; i < size(); ++i) {
    absl::StatusOr<std::unique_ptr<Client>> direct = ConnectMember(i);
    ASSERT_TRUE(direct.ok()) << direct.status();
    auto ns = (*direct)->OpenNamespace(TestNamespace("cluster"));
    ASSERT_TRUE(ns.ok()) << ns.status();
    auto tiers = (*direct)->Exists(*ns, keys);
    ASSERT_TRUE(tiers.ok()) << tiers.status();
    for (size_t k = 0; k < keys.size(); ++k) {
      if ((*tiers)[k] == ChunkTier::kNone) continue;
      EXPECT_EQ(owners[k], MemberId(i)) << "chunk " << k << " is on a member not its owner";
      ++share[MemberId(i)];
    }
  }
  EXPECT_EQ(share.size(), static_cast<size_t>(size())) << "a member got no chunks";
}

INSTANTIATE_TEST_SUITE_P(Transports, ClusterTransportTest,
                         ::testing::Values(Transport::kGrpc, Transport::kUcxTcp),
                         TransportTestName);

// Threads that get known keys (checking every byte) and put fresh ones until stopped.
// `may_miss[i]` says whether keys[i] may ever be a miss (its owner is the member killed).
class Load {
 public:
  Load(Client* client, NamespaceHandle ns, std::vector<Key128> keys, std::vector<bool> may_miss,
       int threads)
      : client_(client), ns_(ns), keys_(std::move(keys)), may_miss_(std::move(may_miss)) {
    for (int t = 0; t < threads; ++t) threads_.emplace_back([this, t] { Run(t); });
  }
  ~Load() { Stop(); }

  void Stop() {
    stop_.store(true);
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  GetTally gets() {
    absl::MutexLock lock(&mu_);
    return gets_;
  }
  // Misses of keys that must always be found.
  int foreign_misses() {
    absl::MutexLock lock(&mu_);
    return foreign_misses_;
  }
  int put_call_errors() {
    absl::MutexLock lock(&mu_);
    return put_call_errors_;
  }
  std::string first_put_error() {
    absl::MutexLock lock(&mu_);
    return first_put_error_;
  }

 private:
  void Run(int t) {
    std::mt19937_64 rng(100 + t);
    while (!stop_.load()) {
      std::vector<Key128> batch;
      std::vector<size_t> picked;
      for (int i = 0; i < 8; ++i) picked.push_back(rng() % keys_.size());
      for (size_t k : picked) batch.push_back(keys_[k]);
      std::vector<bool> found;
      const GetTally tally = GetChecked(*client_, ns_, batch, &found);
      int foreign = 0;
      for (size_t i = 0; tally.call_errors == 0 && i < picked.size(); ++i) {
        foreign += !found[i] && !may_miss_[picked[i]] ? 1 : 0;
      }
      Payload p;
      p.key = RandomKey(rng);
      p.bytes = PatternBytes(p.key, kChunk);
      p.tokens = 16;
      std::vector<PutItem> items = {p.AsPutItem()};
      const absl::Status put = client_->Put(ns_, absl::MakeSpan(items));
      absl::MutexLock lock(&mu_);
      gets_.Add(tally);
      foreign_misses_ += foreign;
      if (!put.ok()) {
        ++put_call_errors_;
        if (first_put_error_.empty()) first_put_error_ = put.ToString();
      }
    }
  }

  Client* const client_;
  const NamespaceHandle ns_;
  const std::vector<Key128> keys_;
  const std::vector<bool> may_miss_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  GetTally gets_ ABSL_GUARDED_BY(mu_);
  int foreign_misses_ ABSL_GUARDED_BY(mu_) = 0;
  int put_call_errors_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_put_error_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;  // last: start once the members above exist
};

// Expects exactly the keys owned by `dead` to be misses and every other key a hit.
void ExpectOnlyShareMissing(Client& client, NamespaceHandle ns, const std::vector<Key128>& keys,
                            const std::vector<std::string>& owners, const std::string& dead) {
  std::vector<bool> found;
  const GetTally tally = GetAllChecked(client, ns, keys, &found);
  EXPECT_EQ(tally.wrong + tally.item_errors + tally.call_errors, 0) << tally.ToString();
  int share = 0, lost_elsewhere = 0, found_on_dead = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (owners[k] == dead) {
      ++share;
      found_on_dead += found[k] ? 1 : 0;
    } else {
      lost_elsewhere += found[k] ? 0 : 1;
    }
  }
  EXPECT_GT(share, 0) << dead << " owned none of the keys";
  EXPECT_EQ(found_on_dead, 0) << "chunks of the killed member were still served";
  EXPECT_EQ(lost_elsewhere, 0) << "chunks of live members became misses";
}

TEST_F(ClusterTest, KilledMemberUnderLoadGivesMissesForItsShareOnly) {
  const std::vector<Key128> keys = PutKeys(*client_, ns_, 240);
  const std::vector<std::string> owners = OwnersOf(MemberSet(), keys);
  std::vector<bool> owned_by_victim;
  for (const std::string& owner : owners) owned_by_victim.push_back(owner == MemberId(1));
  {
    Load load(client_.get(), ns_, keys, owned_by_victim, 3);
    ASSERT_TRUE(PollUntil([&] { return load.gets().hits >= 50; }, settle_timeout()));
    ASSERT_NO_FATAL_FAILURE(KillMember(1));
    // Calls to it stop: the client drops it (lease lapsed) or its breaker opens.
    EXPECT_TRUE(AwaitServing(*client_, LiveIds(), settle_timeout()))
        << "the client still places chunks on the killed member";
    const int hits_then = load.gets().hits;
    ASSERT_TRUE(PollUntil([&] { return load.gets().hits >= hits_then + 50; }, settle_timeout()))
        << "the load made no progress after the kill: " << load.gets().ToString();
    load.Stop();
    const GetTally tally = load.gets();
    EXPECT_EQ(tally.wrong, 0) << tally.ToString();
    EXPECT_EQ(tally.call_errors, 0) << tally.ToString();
    EXPECT_EQ(tally.item_errors, 0) << tally.ToString();
    EXPECT_GT(tally.misses, 0) << "no get ever missed: " << tally.ToString();
    EXPECT_EQ(load.foreign_misses(), 0) << "keys of live members missed under load";
    EXPECT_EQ(load.put_call_errors(), 0) << load.first_put_error();
  }
  EXPECT_TRUE(AwaitRegistered(LiveIds()));
  ExpectOnlyShareMissing(*client_, ns_, keys, owners, MemberId(1));
  // A client that connects now never sees the dead member at all.
  std::unique_ptr<Client> late;
  NamespaceHandle late_ns;
  ASSERT_NO_FATAL_FAILURE(Connect(&late, &late_ns, Transport::kGrpc));
  ExpectOnlyShareMissing(*late, late_ns, keys, owners, MemberId(1));
}

TEST_F(ClusterTest, RestartedMemberServesItsNvmeChunksAgain) {
  const std::vector<Key128> keys = PutKeys(*client_, ns_, 240);
  const std::vector<std::string> owners = OwnersOf(MemberSet(), keys);
  ASSERT_NO_FATAL_FAILURE(KillMember(2));
  ASSERT_TRUE(AwaitRegistered(LiveIds()));
  ASSERT_TRUE(AwaitServing(*client_, LiveIds(), settle_timeout()));
  ExpectOnlyShareMissing(*client_, ns_, keys, owners, MemberId(2));

  ASSERT_NO_FATAL_FAILURE(RestartMember(2));
  ASSERT_TRUE(AwaitServing(*client_, LiveIds(), settle_timeout()))
      << "the client never took the restarted member back";
  const GetTally tally = GetAllChecked(*client_, ns_, keys);
  EXPECT_EQ(tally.hits, static_cast<int>(keys.size())) << tally.ToString();
  // They came from its disk: the restarted member recovered them from NVMe.
  absl::StatusOr<std::unique_ptr<Client>> direct = ConnectMember(2);
  ASSERT_TRUE(direct.ok()) << direct.status();
  absl::StatusOr<ServerStats> stats = (*direct)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GT(stats->recovered_chunks, 0u);
}

TEST_F(ClusterTest, FourthMemberTakesAboutAQuarterAndEveryKeyStaysFound) {
  const std::vector<Key128> keys = PutKeys(*client_, ns_, 400);
  const std::vector<std::string> before = OwnersOf(MemberSet(), keys);
  ASSERT_NO_FATAL_FAILURE(AddMember());
  const std::vector<std::string> after = OwnersOf(MemberSet(), keys);
  ASSERT_TRUE(AwaitServing(*client_, LiveIds(), settle_timeout()));

  int moved = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (before[k] == after[k]) continue;
    ++moved;
    EXPECT_EQ(after[k], MemberId(3)) << "a key moved between members that stayed";
  }
  // Expected 1/4; with 400 keys a fair hash lands within +-0.1 (over 4 standard deviations).
  const double fraction = static_cast<double>(moved) / keys.size();
  EXPECT_GT(fraction, 0.15) << moved << " of " << keys.size() << " moved";
  EXPECT_LT(fraction, 0.35) << moved << " of " << keys.size() << " moved";

  // During the hand-over the moved keys are still found (the old owner is consulted on a
  // miss); the gets copy them to their new owner, so a client that only ever saw four
  // members finds them too.
  // Lookup first: gets copy what they find on a previous owner to the new one.
  absl::StatusOr<LookupResult> lookup = client_->Lookup(ns_, keys);
  ASSERT_TRUE(lookup.ok()) << lookup.status();
  EXPECT_EQ(lookup->hit_count, keys.size());
  absl::StatusOr<ClusterStatus> status = client_->Cluster();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_GT(status->keys_moved, 0u) << "no lookup went to a previous owner";
  GetTally tally = GetAllChecked(*client_, ns_, keys);
  EXPECT_EQ(tally.hits, static_cast<int>(keys.size())) << tally.ToString();
  std::unique_ptr<Client> late;
  NamespaceHandle late_ns;
  ASSERT_NO_FATAL_FAILURE(Connect(&late, &late_ns, Transport::kGrpc));
  // The copies run in the background after the gets returned: wait for the last to land.
  EXPECT_TRUE(PollUntil(
      [&] {
        tally = GetAllChecked(*late, late_ns, keys);
        return tally.hits == static_cast<int>(keys.size()) || tally.wrong > 0;
      },
      settle_timeout(), absl::Milliseconds(100)))
      << tally.ToString();
  EXPECT_EQ(tally.wrong, 0) << tally.ToString();
  // New chunks go to their new owners, the fourth member among them.
  const std::vector<Key128> fresh = PutKeys(*client_, ns_, 80);
  tally = GetAllChecked(*late, late_ns, fresh);
  EXPECT_EQ(tally.hits, static_cast<int>(fresh.size())) << tally.ToString();
}

TEST_F(ClusterTest, ServesWithLastMemberSetWhileEtcdIsDownAndRestarts) {
  const std::vector<Key128> keys = PutKeys(*client_, ns_, 160);
  KillEtcd();
  // Longer than the members' lease TTL: without etcd nothing may expire client-side.
  absl::SleepFor(absl::Seconds(2 * ClusterFixtureOptions{}.lease_ttl_s + 1));
  EXPECT_EQ(ServingIds(*client_), LiveIds()) << "the client dropped members while etcd was down";
  GetTally tally = GetAllChecked(*client_, ns_, keys);
  EXPECT_EQ(tally.hits, static_cast<int>(keys.size())) << tally.ToString();
  const std::vector<Key128> during = PutKeys(*client_, ns_, 48);
  tally = GetAllChecked(*client_, ns_, during);
  EXPECT_EQ(tally.hits, static_cast<int>(during.size())) << tally.ToString();

  ASSERT_NO_FATAL_FAILURE(RestartEtcd());
  EXPECT_TRUE(AwaitRegistered(LiveIds())) << "members are not registered after etcd came back";
  EXPECT_TRUE(AwaitServing(*client_, LiveIds(), settle_timeout()));
  tally = GetAllChecked(*client_, ns_, keys);
  EXPECT_EQ(tally.hits, static_cast<int>(keys.size())) << tally.ToString();
  // A client that connects after the restart sees the same cluster.
  std::unique_ptr<Client> late;
  NamespaceHandle late_ns;
  ASSERT_NO_FATAL_FAILURE(Connect(&late, &late_ns, Transport::kGrpc));
  tally = GetAllChecked(*late, late_ns, during);
  EXPECT_EQ(tally.hits, static_cast<int>(during.size())) << tally.ToString();
}

}  // namespace
}  // namespace kvstash::testing
