// ClientImpl's call policy (retries, deadlines, namespace re-registration, checksums,
// async) against a scripted in-memory transport.
#include "client/client_impl.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "absl/time/clock.h"
#include "xxhash.h"

namespace kvstash::client_internal {
namespace {

// Thread-safe: every member is guarded by mu.
class FakeTransport final : public Transport {
 public:
  absl::Mutex mu;
  std::deque<absl::Status> injected ABSL_GUARDED_BY(mu);  // failures for the next attempts
  std::set<Key128> known ABSL_GUARDED_BY(mu);             // registered namespace ids
  bool forget_always ABSL_GUARDED_BY(mu) = false;
  int attempts ABSL_GUARDED_BY(mu) = 0;
  int registrations ABSL_GUARDED_BY(mu) = 0;
  std::vector<absl::Time> deadlines ABSL_GUARDED_BY(mu);
  std::vector<uint64_t> put_checksums ABSL_GUARDED_BY(mu);
  std::map<Key128, std::string> chunks ABSL_GUARDED_BY(mu);
  uint64_t get_checksum_xor ABSL_GUARDED_BY(mu) = 0;              // corrupts reported checksums
  uint64_t lookup_session ABSL_GUARDED_BY(mu) = 0;                // the last Lookup's session id
  std::vector<std::pair<Key128, bool>> pins ABSL_GUARDED_BY(mu);  // Pin calls: key, pin

  absl::Status WaitConnected(absl::Time) override { return absl::OkStatus(); }

  absl::StatusOr<Key128> RegisterNamespace(const CallContext& ctx, const Namespace& spec) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = Begin(ctx); !s.ok()) return s;
    ++registrations;
    known.insert(spec.Id());
    return spec.Id();
  }
  absl::StatusOr<LookupResult> Lookup(const CallContext& ctx, const Key128& ns,
                                      absl::Span<const Key128> keys, uint32_t,
                                      uint64_t session_id) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = BeginData(ctx, ns); !s.ok()) return s;
    lookup_session = session_id;
    LookupResult r;
    while (r.hit_count < keys.size() && chunks.count(keys[r.hit_count])) {
      ++r.hit_count;
      r.tiers.push_back(ChunkTier::kDram);
    }
    return r;
  }
  absl::Status Put(const CallContext& ctx, const Key128& ns, absl::Span<PutItem> items,
                   absl::Span<const uint64_t> checksums) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = BeginData(ctx, ns); !s.ok()) return s;
    put_checksums.assign(checksums.begin(), checksums.end());
    for (PutItem& item : items) {
      chunks[item.key] = std::string(static_cast<const char*>(item.data), item.size);
      item.status = absl::OkStatus();
    }
    return absl::OkStatus();
  }
  absl::Status Get(const CallContext& ctx, const Key128& ns, absl::Span<GetItem> items,
                   uint64_t) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = BeginData(ctx, ns); !s.ok()) return s;
    for (GetItem& item : items) {
      auto it = chunks.find(item.key);
      if (it == chunks.end()) {
        item.status = absl::NotFoundError("no chunk");
        continue;
      }
      item.size = it->second.size();
      item.checksum = XXH3_64bits(it->second.data(), it->second.size()) ^ get_checksum_xor;
      std::memcpy(item.data, it->second.data(), item.size);
      item.status = absl::OkStatus();
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<ChunkTier>> Exists(const CallContext& ctx, const Key128& ns,
                                                absl::Span<const Key128> keys) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = BeginData(ctx, ns); !s.ok()) return s;
    return std::vector<ChunkTier>(keys.size(), ChunkTier::kNone);
  }
  absl::StatusOr<uint32_t> Delete(const CallContext& ctx, const Key128& ns,
                                  absl::Span<const Key128> keys) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = BeginData(ctx, ns); !s.ok()) return s;
    return 0u;
  }
  absl::StatusOr<ServerStats> Stats(const CallContext& ctx, const Key128*) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = Begin(ctx); !s.ok()) return s;
    return ServerStats();
  }
  absl::StatusOr<HealthInfo> Health(const CallContext& ctx) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = Begin(ctx); !s.ok()) return s;
    HealthInfo h;
    h.serving = true;
    return h;
  }
  absl::StatusOr<std::vector<NamespaceUsage>> ListNamespaces(const CallContext& ctx) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = Begin(ctx); !s.ok()) return s;
    std::vector<NamespaceUsage> out;
    for (const Key128& id : known) out.push_back(NamespaceUsage{id});
    return out;
  }
  absl::StatusOr<uint64_t> ClearNamespace(const CallContext& ctx, const Key128& ns) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = BeginData(ctx, ns); !s.ok()) return s;
    const uint64_t n = chunks.size();
    chunks.clear();
    return n;
  }
  absl::StatusOr<uint32_t> Pin(const CallContext& ctx, const Key128& ns,
                               absl::Span<const Key128> keys, bool pin) override {
    absl::MutexLock lock(&mu);
    if (absl::Status s = BeginData(ctx, ns); !s.ok()) return s;
    for (const Key128& k : keys) pins.emplace_back(k, pin);
    return static_cast<uint32_t>(keys.size());
  }
  absl::Status EndSession(const CallContext& ctx, const Key128& ns, uint64_t) override {
    absl::MutexLock lock(&mu);
    return BeginData(ctx, ns);
  }

 private:
  absl::Status Begin(const CallContext& ctx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    ++attempts;
    deadlines.push_back(ctx.deadline);
    if (injected.empty()) return absl::OkStatus();
    absl::Status s = injected.front();
    injected.pop_front();
    return s;
  }
  absl::Status BeginData(const CallContext& ctx, const Key128& ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (absl::Status s = Begin(ctx); !s.ok()) return s;
    if (forget_always) known.clear();
    if (known.count(ns) == 0) {
      return absl::FailedPreconditionError("unknown namespace " + KeyToHex(ns) +
                                           "; call RegisterNamespace first");
    }
    return absl::OkStatus();
  }
};

Namespace TestSpec() {
  Namespace ns;
  ns.model_id = "test-model";
  return ns;
}

class ClientImplTest : public ::testing::Test {
 protected:
  void Make(ClientOptions options = FastOptions()) {
    auto t = std::make_unique<FakeTransport>();
    fake_ = t.get();
    client_ = std::make_unique<ClientImpl>(std::move(t), options);
  }
  static ClientOptions FastOptions() {
    ClientOptions o;
    o.initial_backoff_ms = 1;
    o.max_backoff_ms = 2;
    o.max_retries = 3;
    return o;
  }
  void Inject(std::initializer_list<absl::Status> failures) {
    absl::MutexLock lock(&fake_->mu);
    fake_->injected.insert(fake_->injected.end(), failures);
  }
  int Attempts() {
    absl::MutexLock lock(&fake_->mu);
    return fake_->attempts;
  }
  int Registrations() {
    absl::MutexLock lock(&fake_->mu);
    return fake_->registrations;
  }

  FakeTransport* fake_ = nullptr;
  std::unique_ptr<ClientImpl> client_;
};

TEST_F(ClientImplTest, RetriesUnavailableUntilSuccess) {
  Make();
  Inject({absl::UnavailableError("down"), absl::UnavailableError("down")});
  EXPECT_TRUE(client_->Health().ok());
  EXPECT_EQ(Attempts(), 3);
}

TEST_F(ClientImplTest, GivesUpAfterMaxRetries) {
  Make();
  Inject({absl::UnavailableError("1"), absl::UnavailableError("2"), absl::UnavailableError("3"),
          absl::UnavailableError("4"), absl::UnavailableError("5")});
  absl::StatusOr<HealthInfo> h = client_->Health();
  EXPECT_TRUE(absl::IsUnavailable(h.status())) << h.status();
  EXPECT_EQ(h.status().message(), "4");  // the last attempt's error
  EXPECT_EQ(Attempts(), 4);              // 1 + max_retries
}

TEST_F(ClientImplTest, RetriesOnlyUnavailable) {
  Make();
  Inject({absl::DeadlineExceededError("slow")});
  EXPECT_TRUE(absl::IsDeadlineExceeded(client_->Health().status()));
  Inject({absl::InvalidArgumentError("bad"), absl::UnavailableError("x")});
  EXPECT_TRUE(absl::IsInvalidArgument(client_->Health().status()));
  EXPECT_EQ(Attempts(), 2);
}

TEST_F(ClientImplTest, NoRetryThatWouldSleepPastTheDeadline) {
  ClientOptions o = FastOptions();
  o.deadline_ms = 50;
  o.initial_backoff_ms = 60000;
  o.max_backoff_ms = 60000;
  Make(o);
  Inject({absl::UnavailableError("down"), absl::UnavailableError("down")});
  EXPECT_TRUE(absl::IsUnavailable(client_->Health().status()));
  EXPECT_EQ(Attempts(), 1);
}

TEST_F(ClientImplTest, AllAttemptsShareOneDeadline) {
  ClientOptions o = FastOptions();
  o.deadline_ms = 7000;
  Make(o);
  Inject({absl::UnavailableError("down")});
  absl::Time before = absl::Now();
  ASSERT_TRUE(client_->Health().ok());
  absl::Time after = absl::Now();
  absl::MutexLock lock(&fake_->mu);
  ASSERT_EQ(fake_->deadlines.size(), 2u);
  EXPECT_EQ(fake_->deadlines[0], fake_->deadlines[1]);
  EXPECT_GE(fake_->deadlines[0], before + absl::Milliseconds(7000));
  EXPECT_LE(fake_->deadlines[0], after + absl::Milliseconds(7000));
}

TEST_F(ClientImplTest, ReregistersForgottenNamespaceAndRetriesOnce) {
  Make();
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_EQ(ns->id, TestSpec().Id());
  {
    absl::MutexLock lock(&fake_->mu);
    fake_->known.clear();  // the daemon restarted
  }
  std::vector<Key128> keys(2);
  auto r = client_->Lookup(*ns, keys, 0, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Registrations(), 2);
}

TEST_F(ClientImplTest, SecondUnknownNamespaceIsReturned) {
  Make();
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok());
  {
    absl::MutexLock lock(&fake_->mu);
    fake_->forget_always = true;
  }
  std::vector<Key128> keys(1);
  auto r = client_->Exists(*ns, keys);
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_EQ(Registrations(), 2);
}

TEST_F(ClientImplTest, NamespaceNotOpenedHereIsNotRegistered) {
  Make();
  NamespaceHandle stranger{TestSpec().Id()};
  std::vector<Key128> keys(1);
  auto r = client_->Delete(stranger, keys);
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_EQ(Registrations(), 0);
}

TEST_F(ClientImplTest, LookupCarriesItsSessionId) {
  Make();
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok());
  std::vector<Key128> keys(1);
  ASSERT_TRUE(client_->Lookup(*ns, keys, 0, 77).ok());
  absl::MutexLock lock(&fake_->mu);
  EXPECT_EQ(fake_->lookup_session, 77u);
}

TEST_F(ClientImplTest, AdminCallsReregisterAForgottenNamespace) {
  Make();
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok());
  std::vector<Key128> keys(2);
  keys[1][0] = 1;
  {
    absl::MutexLock lock(&fake_->mu);
    fake_->known.clear();  // the daemon restarted
  }
  absl::StatusOr<uint32_t> unpinned = client_->Pin(*ns, keys, false);
  ASSERT_TRUE(unpinned.ok()) << unpinned.status();
  EXPECT_EQ(*unpinned, 2u);
  EXPECT_EQ(Registrations(), 2);
  {
    absl::MutexLock lock(&fake_->mu);
    ASSERT_EQ(fake_->pins.size(), 2u);
    EXPECT_EQ(fake_->pins[1], std::make_pair(keys[1], false));
    fake_->known.clear();
  }
  EXPECT_TRUE(client_->ClearNamespace(*ns).ok());
  EXPECT_TRUE(client_->EndSession(*ns, 5).ok());
  EXPECT_EQ(Registrations(), 3);
  absl::StatusOr<std::vector<NamespaceUsage>> list = client_->ListNamespaces();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, ns->id);
}

TEST_F(ClientImplTest, PinOfNoKeysNeedsNoCall) {
  Make();
  NamespaceHandle ns{TestSpec().Id()};
  EXPECT_EQ(*client_->Pin(ns, {}, true), 0u);
  EXPECT_EQ(Attempts(), 0);
}

TEST_F(ClientImplTest, OpenNamespaceValidatesSpec) {
  Make();
  Namespace bad;  // no model_id
  EXPECT_TRUE(absl::IsInvalidArgument(client_->OpenNamespace(bad).status()));
  EXPECT_EQ(Attempts(), 0);
}

TEST_F(ClientImplTest, PutSendsZeroChecksumsByDefault) {
  Make();
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok());
  std::string a = "first chunk";
  std::vector<PutItem> items(1);
  items[0].data = a.data();
  items[0].size = a.size();
  ASSERT_TRUE(client_->Put(*ns, absl::MakeSpan(items)).ok());
  absl::MutexLock lock(&fake_->mu);
  ASSERT_EQ(fake_->put_checksums.size(), 1u);
  EXPECT_EQ(fake_->put_checksums[0], 0u);
}

TEST_F(ClientImplTest, PutSendsXxh3OfEachPayloadWithChecksumPuts) {
  ClientOptions o = FastOptions();
  o.checksum_puts = true;
  Make(o);
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok());
  std::string a = "first chunk", b = "second";
  std::vector<PutItem> items(2);
  items[0].data = a.data();
  items[0].size = a.size();
  items[1].key[0] = 1;
  items[1].data = b.data();
  items[1].size = b.size();
  ASSERT_TRUE(client_->Put(*ns, absl::MakeSpan(items)).ok());
  absl::MutexLock lock(&fake_->mu);
  ASSERT_EQ(fake_->put_checksums.size(), 2u);
  EXPECT_EQ(fake_->put_checksums[0], XXH3_64bits(a.data(), a.size()));
  EXPECT_EQ(fake_->put_checksums[1], XXH3_64bits(b.data(), b.size()));
}

TEST_F(ClientImplTest, RejectsNullBuffersAndEmptyChunks) {
  Make();
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok());
  std::vector<PutItem> puts(1);
  puts[0].size = 10;
  EXPECT_TRUE(absl::IsInvalidArgument(client_->Put(*ns, absl::MakeSpan(puts))));
  char byte = 0;
  puts[0].data = &byte;
  puts[0].size = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(client_->Put(*ns, absl::MakeSpan(puts))));
  std::vector<GetItem> gets(1);
  gets[0].capacity = 10;
  EXPECT_TRUE(absl::IsInvalidArgument(client_->Get(*ns, absl::MakeSpan(gets), 0)));
}

TEST_F(ClientImplTest, EmptyRequestsNeedNoCall) {
  Make();
  NamespaceHandle ns{TestSpec().Id()};
  EXPECT_TRUE(client_->Put(ns, {}).ok());
  EXPECT_TRUE(client_->Get(ns, {}, 0).ok());
  EXPECT_EQ(client_->Lookup(ns, {}, 0, 0)->hit_count, 0u);
  EXPECT_TRUE(client_->Exists(ns, {})->empty());
  EXPECT_EQ(*client_->Delete(ns, {}), 0u);
  EXPECT_EQ(Attempts(), 0);
}

class ChecksumTest : public ClientImplTest, public ::testing::WithParamInterface<bool> {};

TEST_P(ChecksumTest, VerifiesOnlyWhenAsked) {
  ClientOptions o = FastOptions();
  o.verify_checksums = GetParam();
  Make(o);
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok());
  std::string payload(1000, 'x');
  std::vector<PutItem> puts(1);
  puts[0].data = payload.data();
  puts[0].size = payload.size();
  ASSERT_TRUE(client_->Put(*ns, absl::MakeSpan(puts)).ok());
  {
    absl::MutexLock lock(&fake_->mu);
    fake_->get_checksum_xor = 1;
  }
  std::string buf(1000, '\0');
  std::vector<GetItem> gets(1);
  gets[0].data = buf.data();
  gets[0].capacity = buf.size();
  ASSERT_TRUE(client_->Get(*ns, absl::MakeSpan(gets), 0).ok());
  if (GetParam()) {
    EXPECT_TRUE(absl::IsDataLoss(gets[0].status)) << gets[0].status;
  } else {
    EXPECT_TRUE(gets[0].status.ok()) << gets[0].status;
  }
}

INSTANTIATE_TEST_SUITE_P(VerifyOnOff, ChecksumTest, ::testing::Bool());

TEST_F(ClientImplTest, AsyncCallsResolve) {
  Make();
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok());
  std::string payload = "async bytes";
  std::vector<PutItem> puts(1);
  puts[0].data = payload.data();
  puts[0].size = payload.size();
  ASSERT_TRUE(client_->PutAsync(*ns, absl::MakeSpan(puts)).get().ok());
  std::string buf(64, '\0');
  std::vector<GetItem> gets(2);
  gets[0].data = buf.data();
  gets[0].capacity = buf.size();
  gets[1].key[0] = 9;  // never stored
  ASSERT_TRUE(client_->GetAsync(*ns, absl::MakeSpan(gets), 0).get().ok());
  EXPECT_TRUE(gets[0].status.ok());
  EXPECT_EQ(buf.substr(0, gets[0].size), payload);
  EXPECT_TRUE(absl::IsNotFound(gets[1].status));
}

TEST_F(ClientImplTest, PendingAsyncCallsFinishOnDestruction) {
  Make();
  auto ns = client_->OpenNamespace(TestSpec());
  ASSERT_TRUE(ns.ok());
  std::string payload = "x";
  std::vector<PutItem> puts(20);
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 20; ++i) {
    puts[i].key[0] = static_cast<uint8_t>(i);
    puts[i].data = payload.data();
    puts[i].size = payload.size();
    futures.push_back(client_->PutAsync(*ns, absl::MakeSpan(&puts[i], 1)));
  }
  client_.reset();
  for (auto& f : futures) EXPECT_TRUE(f.get().ok());
}

TEST(IsUnknownNamespaceTest, MatchesDaemonMessageOnly) {
  EXPECT_TRUE(IsUnknownNamespace(
      absl::FailedPreconditionError("unknown namespace 00ff; call RegisterNamespace first")));
  EXPECT_FALSE(IsUnknownNamespace(absl::FailedPreconditionError("lease expired")));
  EXPECT_FALSE(IsUnknownNamespace(absl::NotFoundError("unknown namespace")));
}

}  // namespace
}  // namespace kvstash::client_internal
