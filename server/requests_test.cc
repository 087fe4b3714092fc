// The request layer's hint and admin rules against a store that records what reaches it:
// hints validated once and handed to BeginPut, a Lookup's session id, the tenant a
// registration binds, the admin calls forwarded (or refused before the store).
#include "server/requests.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/auth/call_limiter.h"
#include "server/metrics/exposition.h"

namespace kvstash::server {
namespace {

using ::testing::HasSubstr;

// A real DRAM store that records the hint and admin calls and answers the admin calls
// itself (the real store's answers are tested with the store).
//
// Thread-safety: thread-safe (mu guards the records).
class RecordingStore final : public storage::ChunkStore {
 public:
  explicit RecordingStore(std::unique_ptr<storage::ChunkStore> inner) : inner_(std::move(inner)) {}

  absl::StatusOr<std::unique_ptr<storage::PendingChunk>> BeginPut(const storage::ChunkId& id,
                                                                  const storage::ChunkMeta& meta,
                                                                  const PutHints& hints) override {
    absl::MutexLock lock(&mu);
    put_hints.push_back(hints);
    return inner_->BeginPut(id, meta, hints);
  }
  absl::Status CommitPut(std::unique_ptr<storage::PendingChunk> pending) override {
    return inner_->CommitPut(std::move(pending));
  }
  absl::StatusOr<storage::ChunkRef> Get(const storage::ChunkId& id) override {
    return inner_->Get(id);
  }
  void GetAsync(const storage::ChunkId& id, uint64_t lease_id, GetCallback done) override {
    inner_->GetAsync(id, lease_id, std::move(done));
  }
  void ReleaseLease(uint64_t lease_id, const storage::ChunkId& id) override {
    inner_->ReleaseLease(lease_id, id);
  }
  storage::LookupResult Lookup(const Key128& ns, absl::Span<const Key128> keys,
                               absl::Duration lease, uint64_t session_id) override {
    absl::MutexLock lock(&mu);
    lookup_sessions.push_back(session_id);
    return inner_->Lookup(ns, keys, lease, session_id);
  }
  storage::Tier Locate(const storage::ChunkId& id) const override { return inner_->Locate(id); }
  absl::Status Delete(const storage::ChunkId& id) override { return inner_->Delete(id); }
  void SetNamespaceTenant(const Key128& ns, const std::string& tenant) override {
    absl::MutexLock lock(&mu);
    tenants[ns] = tenant;
  }
  absl::StatusOr<uint32_t> Pin(const Key128& ns, absl::Span<const Key128> keys, bool pin) override {
    absl::MutexLock lock(&mu);
    pins.push_back({std::vector<Key128>(keys.begin(), keys.end()), pin});
    return static_cast<uint32_t>(keys.size());
  }
  void EndSession(const Key128& ns, uint64_t session_id) override {
    absl::MutexLock lock(&mu);
    ended_sessions.push_back(session_id);
  }
  uint64_t ClearNamespace(const Key128& ns) override {
    absl::MutexLock lock(&mu);
    cleared.push_back(ns);
    return 7;
  }
  std::vector<storage::NamespaceUsage> NamespaceUsages() const override {
    absl::MutexLock lock(&mu);
    return usages;
  }
  storage::StoreStats Stats() const override { return inner_->Stats(); }
  storage::CounterSnapshot NamespaceCounters(const Key128& ns) const override {
    return inner_->NamespaceCounters(ns);
  }
  std::vector<std::pair<Key128, storage::CounterSnapshot>> AllNamespaceCounters() const override {
    return inner_->AllNamespaceCounters();
  }

  mutable absl::Mutex mu;
  std::vector<PutHints> put_hints ABSL_GUARDED_BY(mu);
  std::vector<uint64_t> lookup_sessions ABSL_GUARDED_BY(mu);
  std::map<Key128, std::string> tenants ABSL_GUARDED_BY(mu);
  std::vector<std::pair<std::vector<Key128>, bool>> pins ABSL_GUARDED_BY(mu);
  std::vector<uint64_t> ended_sessions ABSL_GUARDED_BY(mu);
  std::vector<Key128> cleared ABSL_GUARDED_BY(mu);
  std::vector<storage::NamespaceUsage> usages ABSL_GUARDED_BY(mu);

 private:
  std::unique_ptr<storage::ChunkStore> inner_;
};

Key128 TestKey(uint8_t i) {
  Key128 k{};
  k[0] = i;
  k[15] = 0x5a;
  return k;
}

std::string Bytes(const Key128& k) { return std::string(k.begin(), k.end()); }

std::string KeysBytes(const std::vector<Key128>& keys) {
  std::string out;
  for (const Key128& k : keys) out += Bytes(k);
  return out;
}

class RequestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::ChunkStoreOptions options;
    options.dram_capacity_bytes = 16 << 20;
    options.huge_pages = storage::ChunkStoreOptions::HugePages::kOff;
    options.prefault_dram = false;
    absl::StatusOr<std::unique_ptr<storage::ChunkStore>> inner =
        storage::ChunkStore::Create(options);
    ASSERT_TRUE(inner.ok()) << inner.status();
    store_ = std::make_unique<RecordingStore>(std::move(*inner));
    LogConfig log_config;
    log_config.level = LogLevel::kError;
    log_ = std::make_unique<Logger>(log_config);
    env_.store = store_.get();
    env_.registry = &registry_;
    env_.log = log_.get();
    env_.limits.max_ttl_ms = 1000;
    requests_ = std::make_unique<Requests>(&env_, &metrics_, "test");
    ns_ = Register("model-a", "team-a");
  }

  static v1::NamespaceSpec Spec(const std::string& model, const std::string& tenant) {
    v1::NamespaceSpec spec;
    spec.set_tenant(tenant);
    spec.set_model_id(model);
    spec.set_tp_size(1);
    spec.set_chunk_tokens(16);
    return spec;
  }

  Key128 Register(const std::string& model, const std::string& tenant) {
    v1::RegisterNamespaceRequest req;
    *req.mutable_spec() = Spec(model, tenant);
    v1::RegisterNamespaceResponse resp;
    EXPECT_TRUE(requests_->Unary(open_, req, &resp).ok());
    Key128 id{};
    std::memcpy(id.data(), resp.namespace_id().data(), id.size());
    return id;
  }

  // A one-byte chunk header with `hints`.
  PutChunkHeader Header(const Key128& key, const PutChunkHints& hints) {
    key_bytes_ = Bytes(key);
    PutChunkHeader h;
    h.key = key_bytes_;
    h.meta.size_bytes = 1;
    h.hints = hints;
    return h;
  }

  // The store holds NVMe chunks of TestKey(0), a namespace not registered since a restart,
  // bound to `tenant` ("" = unbound); returns the request that clears it.
  v1::ClearNamespaceRequest StoredOnly(const std::string& tenant) {
    storage::NamespaceUsage recovered;  // as ListNamespaces shows it
    recovered.ns = TestKey(0);
    recovered.tenant = tenant;
    recovered.tiers = {{storage::Tier::kNvme, 2, 200}};
    {
      absl::MutexLock lock(&store_->mu);
      store_->usages = {recovered};
    }
    v1::ClearNamespaceRequest clear;
    clear.set_namespace_id(Bytes(TestKey(0)));
    return clear;
  }

  std::unique_ptr<RecordingStore> store_;
  std::unique_ptr<Logger> log_;
  NamespaceRegistry registry_;
  ServiceEnv env_;
  TransportMetrics metrics_{"test"};
  std::unique_ptr<Requests> requests_;
  const CallAuth open_{auth::OpenPrincipal(), nullptr};  // every right
  Key128 ns_{};
  std::string key_bytes_;
};

TEST_F(RequestsTest, PutHintsReachTheStore) {
  const std::string parent = Bytes(TestKey(1));
  PutChunkHints hints;
  hints.parent_key = parent;
  hints.session_id = 9;
  hints.ttl_ms = 1000;  // the limit itself is allowed
  hints.priority = 2;
  hints.pin = true;
  const PutChunkHeader h = Header(TestKey(2), hints);
  ASSERT_TRUE(requests_->CheckPutChunk(h).ok());
  PutChunk chunk = requests_->BeginPut(open_, ns_, h);
  ASSERT_NE(chunk.pending(), nullptr);
  const char byte = 'x';
  ASSERT_TRUE(chunk.pending()->Append(&byte, 1).ok());
  EXPECT_TRUE(chunk.Finish().ok());

  absl::MutexLock lock(&store_->mu);
  ASSERT_EQ(store_->put_hints.size(), 1u);
  const PutHints& got = store_->put_hints[0];
  EXPECT_TRUE(got.has_parent);
  EXPECT_EQ(got.parent, TestKey(1));
  EXPECT_EQ(got.session_id, 9u);
  EXPECT_EQ(got.ttl_ms, 1000u);
  EXPECT_EQ(got.priority, Priority::kHigh);
  EXPECT_TRUE(got.pin);
}

TEST_F(RequestsTest, AChunkWithoutHintsHasNone) {
  PutChunk chunk = requests_->BeginPut(open_, ns_, Header(TestKey(3), {}));
  ASSERT_NE(chunk.pending(), nullptr);
  absl::MutexLock lock(&store_->mu);
  ASSERT_EQ(store_->put_hints.size(), 1u);
  const PutHints& got = store_->put_hints[0];
  EXPECT_FALSE(got.has_parent);
  EXPECT_EQ(got.session_id, 0u);
  EXPECT_EQ(got.ttl_ms, 0u);
  EXPECT_EQ(got.priority, Priority::kNormal);
  EXPECT_FALSE(got.pin);
}

TEST_F(RequestsTest, BadHintsNameTheChunkAndTheField) {
  const std::string short_parent(5, 'p');
  struct Case {
    PutChunkHints hints;
    const char* field;
  };
  std::vector<Case> cases(4);
  cases[0].hints.parent_key = short_parent;
  cases[0].field = "chunk 0: hints.parent_key must be 16 bytes, got 5";
  cases[1].hints.priority = 3;
  cases[1].field = "chunk 0: hints.priority 3 is not a known priority";
  cases[2].hints.priority = -1;
  cases[2].field = "hints.priority -1";
  cases[3].hints.ttl_ms = 1001;
  cases[3].field = "chunk 0: hints.ttl_ms 1001 exceeds server.max_ttl_ms (1000)";
  for (const Case& c : cases) {
    const absl::Status s = requests_->CheckPutChunk(Header(TestKey(4), c.hints));
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.field));
  }
}

TEST_F(RequestsTest, LookupHandsItsSessionToTheStore) {
  v1::LookupRequest req;
  req.set_namespace_id(Bytes(ns_));
  req.set_keys(Bytes(TestKey(1)));
  req.set_session_id(123);
  v1::LookupResponse resp;
  ASSERT_TRUE(requests_->Unary(open_, req, &resp).ok());
  absl::MutexLock lock(&store_->mu);
  EXPECT_EQ(store_->lookup_sessions, std::vector<uint64_t>{123});
}

TEST_F(RequestsTest, RegistrationBindsTheSpecsTenant) {
  const Key128 other = Register("model-b", "");
  absl::MutexLock lock(&store_->mu);
  EXPECT_EQ(store_->tenants[ns_], "team-a");
  EXPECT_EQ(store_->tenants[other], "default");  // a spec without a tenant
}

TEST_F(RequestsTest, AdminCallsReachTheStore) {
  v1::PinRequest pin;
  pin.set_namespace_id(Bytes(ns_));
  pin.set_keys(KeysBytes({TestKey(1), TestKey(2)}));
  v1::PinResponse pinned;
  ASSERT_TRUE(requests_->Unary(open_, pin, &pinned).ok());
  EXPECT_EQ(pinned.changed(), 2u);
  pin.set_unpin(true);
  // Over a transport that carries serialized messages (UCX).
  std::string out;
  ASSERT_TRUE(requests_->Unary(open_, Op::kPin, pin.SerializeAsString(), &out).ok());

  v1::ClearNamespaceRequest clear;
  clear.set_namespace_id(Bytes(ns_));
  v1::ClearNamespaceResponse cleared;
  ASSERT_TRUE(requests_->Unary(open_, clear, &cleared).ok());
  EXPECT_EQ(cleared.deleted(), 7u);

  v1::EndSessionRequest end;
  end.set_namespace_id(Bytes(ns_));
  end.set_session_id(5);
  v1::EndSessionResponse ended;
  ASSERT_TRUE(requests_->Unary(open_, end, &ended).ok());
  end.set_session_id(0);
  const absl::Status zero = requests_->Unary(open_, end, &ended);
  EXPECT_TRUE(absl::IsInvalidArgument(zero)) << zero;
  EXPECT_THAT(std::string(zero.message()), HasSubstr("session_id"));

  absl::MutexLock lock(&store_->mu);
  ASSERT_EQ(store_->pins.size(), 2u);
  EXPECT_EQ(store_->pins[0].first, (std::vector<Key128>{TestKey(1), TestKey(2)}));
  EXPECT_TRUE(store_->pins[0].second);
  EXPECT_FALSE(store_->pins[1].second);
  EXPECT_EQ(store_->cleared, std::vector<Key128>{ns_});
  EXPECT_EQ(store_->ended_sessions, std::vector<uint64_t>{5});
}

TEST_F(RequestsTest, AdminCallsOnAnUnknownNamespaceNeverReachTheStore) {
  const std::string unknown = Bytes(TestKey(99));
  v1::PinRequest pin;
  pin.set_namespace_id(unknown);
  pin.set_keys(Bytes(TestKey(1)));
  v1::PinResponse pinned;
  EXPECT_TRUE(absl::IsFailedPrecondition(requests_->Unary(open_, pin, &pinned)));
  v1::ClearNamespaceRequest clear;
  clear.set_namespace_id(unknown);
  v1::ClearNamespaceResponse cleared;
  EXPECT_TRUE(absl::IsFailedPrecondition(requests_->Unary(open_, clear, &cleared)));
  v1::EndSessionRequest end;
  end.set_namespace_id(unknown);
  end.set_session_id(1);
  v1::EndSessionResponse ended;
  EXPECT_TRUE(absl::IsFailedPrecondition(requests_->Unary(open_, end, &ended)));
  clear.set_namespace_id("short");
  EXPECT_TRUE(absl::IsInvalidArgument(requests_->Unary(open_, clear, &cleared)));
  absl::MutexLock lock(&store_->mu);
  EXPECT_TRUE(store_->pins.empty());
  EXPECT_TRUE(store_->cleared.empty());
  EXPECT_TRUE(store_->ended_sessions.empty());
}

TEST_F(RequestsTest, ClearReachesAStoredNamespaceNotRegisteredSinceARestart) {
  const v1::ClearNamespaceRequest clear = StoredOnly("");
  v1::ClearNamespaceResponse cleared;
  ASSERT_TRUE(requests_->Unary(open_, clear, &cleared).ok());
  EXPECT_EQ(cleared.deleted(), 7u);
  // Pins still need a registered namespace.
  v1::PinRequest pin;
  pin.set_namespace_id(Bytes(TestKey(0)));
  pin.set_keys(Bytes(TestKey(1)));
  v1::PinResponse pinned;
  EXPECT_TRUE(absl::IsFailedPrecondition(requests_->Unary(open_, pin, &pinned)));
  absl::MutexLock lock(&store_->mu);
  EXPECT_EQ(store_->cleared, std::vector<Key128>{TestKey(0)});
  EXPECT_TRUE(store_->pins.empty());
}

TEST_F(RequestsTest, ListNamespacesJoinsRegistryAndStoreSortedById) {
  storage::NamespaceUsage registered;
  registered.ns = ns_;
  registered.tenant = "team-a";
  registered.tiers = {{storage::Tier::kDram, 3, 300}, {storage::Tier::kNvme, 1, 100}};
  registered.pinned_bytes = 50;
  storage::NamespaceUsage recovered;  // chunks from NVMe, writer not registered yet
  recovered.ns = TestKey(0);
  recovered.tiers = {{storage::Tier::kNvme, 2, 200}};
  {
    absl::MutexLock lock(&store_->mu);
    store_->usages = {registered, recovered};
  }
  const Key128 idle = Register("model-c", "team-c");  // registered, nothing stored
  v1::ListNamespacesResponse resp;
  ASSERT_TRUE(requests_->Unary(open_, v1::ListNamespacesRequest(), &resp).ok());
  ASSERT_EQ(resp.namespaces_size(), 3);
  std::vector<Key128> ids = {ns_, TestKey(0), idle};
  std::sort(ids.begin(), ids.end());
  std::map<Key128, v1::NamespaceUsage> by_id;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(resp.namespaces(i).namespace_id(), Bytes(ids[i])) << i;
    by_id[ids[i]] = resp.namespaces(i);
  }
  const v1::NamespaceUsage& a = by_id[ns_];
  EXPECT_EQ(a.spec().model_id(), "model-a");
  EXPECT_EQ(a.tenant(), "team-a");
  ASSERT_EQ(a.tiers_size(), 2);
  EXPECT_EQ(a.tiers(0).tier(), v1::TIER_DRAM);
  EXPECT_EQ(a.tiers(0).chunks(), 3u);
  EXPECT_EQ(a.tiers(0).bytes(), 300u);
  EXPECT_EQ(a.tiers(1).tier(), v1::TIER_NVME);
  EXPECT_EQ(a.tiers(1).chunks(), 1u);
  EXPECT_EQ(a.tiers(1).bytes(), 100u);
  EXPECT_EQ(a.pinned_bytes(), 50u);
  EXPECT_FALSE(by_id[TestKey(0)].has_spec());
  ASSERT_EQ(by_id[TestKey(0)].tiers_size(), 1);
  EXPECT_EQ(by_id[TestKey(0)].tiers(0).chunks(), 2u);
  EXPECT_EQ(by_id[idle].spec().model_id(), "model-c");
  EXPECT_EQ(by_id[idle].tenant(), "team-c");
  EXPECT_EQ(by_id[idle].tiers_size(), 0);
  // Clients that predate `tiers` read the DRAM and NVMe fields.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  EXPECT_EQ(a.dram_chunks(), 3u);
  EXPECT_EQ(a.dram_bytes(), 300u);
  EXPECT_EQ(a.nvme_chunks(), 1u);
  EXPECT_EQ(a.nvme_bytes(), 100u);
  EXPECT_EQ(by_id[TestKey(0)].nvme_bytes(), 200u);
#pragma GCC diagnostic pop
}

// A principal with `read`, `write` and `admin` on the tenants named.
CallAuth Caller(const std::string& name, std::vector<std::string> read,
                std::vector<std::string> write = {}, std::vector<std::string> admin = {}) {
  auto p = std::make_shared<auth::Principal>();
  p->name = name;
  p->read.insert(read.begin(), read.end());
  p->write.insert(write.begin(), write.end());
  p->admin.insert(admin.begin(), admin.end());
  return CallAuth{std::move(p), nullptr};
}

TEST_F(RequestsTest, EveryCallIsCheckedAgainstTheTenantOfItsNamespace) {
  const CallAuth bob = Caller("bob", {"team-b"}, {"team-b"}, {"team-b"});
  const std::string a = Bytes(ns_);  // team-a's
  v1::LookupRequest lookup;
  lookup.set_namespace_id(a);
  v1::LookupResponse looked;
  const absl::Status s = requests_->Unary(bob, lookup, &looked);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              ::testing::AllOf(::testing::HasSubstr("\"bob\""), ::testing::HasSubstr("read"),
                               ::testing::HasSubstr("\"team-a\"")));
  v1::KeysRequest keys;
  keys.set_namespace_id(a);
  keys.set_keys(Bytes(TestKey(1)));
  v1::ExistsResponse exists;
  EXPECT_TRUE(absl::IsPermissionDenied(requests_->Unary(bob, keys, &exists)));
  v1::DeleteResponse deleted;
  EXPECT_TRUE(absl::IsPermissionDenied(requests_->Unary(bob, keys, &deleted)));
  EXPECT_TRUE(
      absl::IsPermissionDenied(requests_->ResolveNamespace(bob, a, auth::Access::kWrite).status()));
  v1::RegisterNamespaceRequest reg;
  *reg.mutable_spec() = Spec("model-x", "team-a");
  v1::RegisterNamespaceResponse registered;
  EXPECT_TRUE(absl::IsPermissionDenied(requests_->Unary(bob, reg, &registered)));
  // An empty tenant is the default tenant.
  *reg.mutable_spec() = Spec("model-x", "");
  EXPECT_TRUE(absl::IsPermissionDenied(requests_->Unary(bob, reg, &registered)));
  EXPECT_TRUE(requests_->Unary(Caller("d", {}, {"default"}), reg, &registered).ok());
  // A call no transport authenticated has no rights at all.
  EXPECT_TRUE(absl::IsPermissionDenied(requests_->Unary(CallAuth{}, keys, &exists)));
  EXPECT_EQ(metrics_.active_calls(), 0);
}

TEST_F(RequestsTest, WriteDoesNotImplyReadNorAdmin) {
  const CallAuth writer = Caller("w", {}, {"team-a"});
  const std::string a = Bytes(ns_);
  EXPECT_TRUE(requests_->ResolveNamespace(writer, a, auth::Access::kWrite).ok());
  EXPECT_TRUE(absl::IsPermissionDenied(
      requests_->ResolveNamespace(writer, a, auth::Access::kRead).status()));
  v1::PinRequest pin;
  pin.set_namespace_id(a);
  pin.set_keys(Bytes(TestKey(1)));
  v1::PinResponse pinned;
  EXPECT_TRUE(absl::IsPermissionDenied(requests_->Unary(writer, pin, &pinned)));
  v1::EndSessionRequest end;
  end.set_namespace_id(a);
  end.set_session_id(1);
  v1::EndSessionResponse ended;
  EXPECT_TRUE(absl::IsPermissionDenied(requests_->Unary(writer, end, &ended)));
  v1::ClearNamespaceRequest clear;
  clear.set_namespace_id(a);
  v1::ClearNamespaceResponse cleared;
  EXPECT_TRUE(absl::IsPermissionDenied(requests_->Unary(writer, clear, &cleared)));
  const CallAuth admin = Caller("adm", {}, {}, {"team-a"});
  EXPECT_TRUE(requests_->Unary(admin, end, &ended).ok());
  absl::MutexLock lock(&store_->mu);
  EXPECT_TRUE(store_->pins.empty());
  EXPECT_TRUE(store_->cleared.empty());
  EXPECT_EQ(store_->ended_sessions.size(), 1u);
}

TEST_F(RequestsTest, ClearOfAStoredNamespaceNeedsAdminOnItsBoundTenant) {
  const v1::ClearNamespaceRequest clear = StoredOnly("team-r");
  v1::ClearNamespaceResponse cleared;
  EXPECT_TRUE(
      absl::IsPermissionDenied(requests_->Unary(Caller("a", {}, {}, {"team-a"}), clear, &cleared)));
  EXPECT_TRUE(requests_->Unary(Caller("r", {}, {}, {"team-r"}), clear, &cleared).ok());
}

// Tenant bindings do not survive a restart: chunks of a namespace not registered since may
// be any tenant's, so only a caller with the right on every tenant sees or clears them.
TEST_F(RequestsTest, AnUnboundStoredNamespaceNeedsTheRightOnEveryTenant) {
  const v1::ClearNamespaceRequest clear = StoredOnly("");
  v1::ClearNamespaceResponse cleared;
  const CallAuth default_admin = Caller("d", {"default"}, {}, {"default"});
  EXPECT_TRUE(absl::IsPermissionDenied(requests_->Unary(default_admin, clear, &cleared)));
  v1::ListNamespacesResponse listed;
  ASSERT_TRUE(requests_->Unary(default_admin, v1::ListNamespacesRequest(), &listed).ok());
  for (const v1::NamespaceUsage& u : listed.namespaces()) {
    EXPECT_NE(u.namespace_id(), Bytes(TestKey(0)));
  }
  const CallAuth all = Caller("all", {"*"}, {}, {"*"});
  ASSERT_TRUE(requests_->Unary(all, v1::ListNamespacesRequest(), &listed).ok());
  EXPECT_TRUE(requests_->Unary(all, clear, &cleared).ok());
  absl::MutexLock lock(&store_->mu);
  EXPECT_EQ(store_->cleared.size(), 1u);
}

TEST_F(RequestsTest, StatsNeedReadOnEveryTenantAndListingIsFiltered) {
  Register("model-b", "team-b");
  v1::StatsResponse stats;
  EXPECT_TRUE(absl::IsPermissionDenied(
      requests_->Unary(Caller("a", {"team-a"}), v1::StatsRequest(), &stats)));
  EXPECT_TRUE(requests_->Unary(Caller("all", {"*"}), v1::StatsRequest(), &stats).ok());
  v1::ListNamespacesResponse mine;
  ASSERT_TRUE(requests_->Unary(Caller("a", {"team-a"}), v1::ListNamespacesRequest(), &mine).ok());
  ASSERT_EQ(mine.namespaces_size(), 1);
  EXPECT_EQ(mine.namespaces(0).tenant(), "team-a");
  v1::ListNamespacesResponse all;
  ASSERT_TRUE(requests_->Unary(Caller("all", {"*"}), v1::ListNamespacesRequest(), &all).ok());
  EXPECT_EQ(all.namespaces_size(), 2);
  // Health needs no right.
  v1::HealthResponse health;
  EXPECT_TRUE(requests_->Unary(CallAuth{}, v1::HealthRequest(), &health).ok());
}

TEST_F(RequestsTest, WithoutAnAuthenticatorEveryCallerIsOpen) {
  absl::StatusOr<CallAuth> caller = requests_->Authenticate(Op::kLookup, "");
  ASSERT_TRUE(caller.ok()) << caller.status();
  ASSERT_NE(caller->principal, nullptr);
  EXPECT_TRUE(caller->principal->MayAll(auth::Access::kAdmin));
  // Health without a token is answered without a principal.
  caller = requests_->Authenticate(Op::kHealth, "");
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_EQ(caller->principal, nullptr);
}

TEST_F(RequestsTest, LimitsRefuseCallsAndChunksOfOnePrincipal) {
  // A clock that never moves: no bucket refills during the test.
  auth::CallLimiter limiter([] { return absl::FromUnixSeconds(1000); });
  env_.limiter = &limiter;
  auto p = std::make_shared<auth::Principal>();
  p->name = "slow";
  p->write.insert("team-a");
  p->limits.calls_per_s = 1;
  p->limits.bytes_per_s = 1;
  const CallAuth slow{p, nullptr};
  // Calls: the one-call burst, then RESOURCE_EXHAUSTED. (Authenticate needs a token file
  // for a principal other than the open one; BeginCall is what it asks the limiter.)
  EXPECT_TRUE(limiter.BeginCall(*p).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(limiter.BeginCall(*p).status()));
  // Bytes: the first chunk drives the bucket into debt, the next fails on its own and
  // reserves nothing.
  EXPECT_TRUE(requests_->BeginPut(slow, ns_, Header(TestKey(1), {})).pending() != nullptr);
  PutChunk refused = requests_->BeginPut(slow, ns_, Header(TestKey(2), {}));
  EXPECT_EQ(refused.pending(), nullptr);
  EXPECT_TRUE(absl::IsResourceExhausted(refused.Finish()));
  // Others are unaffected.
  EXPECT_TRUE(requests_->BeginPut(open_, ns_, Header(TestKey(3), {})).pending() != nullptr);
  env_.limiter = nullptr;
}

// A Get begins in the request layer whatever the transport: the namespace resolved for
// reading, the key count checked, each item fetched and served there, the call recorded once.
TEST_F(RequestsTest, GetBeginsServesAndEndsOnce) {
  PutChunk chunk = requests_->BeginPut(open_, ns_, Header(TestKey(2), {}));
  const char byte = 'x';
  ASSERT_TRUE(chunk.pending()->Append(&byte, 1).ok());
  ASSERT_TRUE(chunk.Finish().ok());

  const auto start = TransportMetrics::Clock::now();
  EXPECT_TRUE(absl::IsFailedPrecondition(
      requests_->BeginGet(open_, Bytes(TestKey(9)), 1, 0, start).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(
      requests_->BeginGet(Caller("bob", {"team-b"}), Bytes(ns_), 1, 0, start).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      requests_->BeginGet(open_, Bytes(ns_), env_.limits.max_keys_per_request + 1, 0, start)
          .status()));

  absl::StatusOr<std::shared_ptr<ActiveGet>> call =
      requests_->BeginGet(open_, Bytes(ns_), 2, 0, start);
  ASSERT_TRUE(call.ok()) << call.status();
  std::vector<absl::StatusOr<storage::ChunkRef>> served;
  for (const Key128& key : {TestKey(2), TestKey(3)}) {
    (*call)->Fetch(key, [&](absl::StatusOr<storage::ChunkRef> ref) {
      served.push_back((*call)->Serve(std::move(ref)));
    });
  }
  ASSERT_EQ(served.size(), 2u);  // DRAM answers inline
  ASSERT_TRUE(served[0].ok()) << served[0].status();
  EXPECT_EQ((*served[0])->meta().size_bytes, 1u);
  EXPECT_TRUE(absl::IsNotFound(served[1].status()));

  (*call)->End(absl::StatusCode::kOk);
  (*call)->End(absl::StatusCode::kInternal);  // too late: counted once, as OK
  call->reset();
  std::vector<metrics::Family> families;
  metrics_.Collect(&families);
  const std::string text = metrics::RenderText(families);
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "kvstash_op_duration_seconds_count{op=\"get\",transport=\"test\"} 1\n"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("op=\"get\",transport=\"test\",code")));
}

}  // namespace
}  // namespace kvstash::server
