// ClusterClient: connecting, following the member set, namespaces, memory ranges, and the
// calls that go to every member (admin, stats, health). The data calls are in
// cluster_data.cc.
#include "client/cluster_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/fan_out.h"
#include "client/uri.h"

namespace kvstash::client_internal {
namespace {

absl::StatusOr<std::unique_ptr<cluster::MemberSource>> MakeSource(const ClusterUri& uri,
                                                                  const ClusterOptions& options) {
  switch (uri.scheme) {
    case ClusterScheme::kEtcd: {
      cluster::EtcdOptions etcd;
      etcd.endpoints = uri.addresses;
      return cluster::NewEtcdMemberSource(etcd, cluster::ClusterPrefix(uri.name));
    }
    case ClusterScheme::kStatic:
      return cluster::NewStaticMemberSource(uri.addresses);
    case ClusterScheme::kDns:
      return cluster::NewDnsMemberSource(uri.host, uri.port,
                                         absl::Milliseconds(options.dns_refresh_ms));
  }
  return absl::InvalidArgumentError("unknown cluster scheme");
}

// Each member's answer to a call made on every member.
template <typename T>
using Answers = std::vector<absl::StatusOr<T>>;

// Makes `call` on every member of `view` at once.
template <typename T, typename Call>
Answers<T> OnEveryMember(const ClusterView& view, const Key128* ns, Call call) {
  Answers<T> out(view.conns.size(), absl::UnavailableError("not asked"));
  FanOut(view.conns.size(), [&](size_t i) {
    MemberConn& conn = *view.conns[i];
    absl::StatusOr<Client*> client = conn.Begin(ns);
    if (!client.ok()) {
      out[i] = client.status();
      return;
    }
    out[i] = call(**client);
    conn.Done(out[i].status());
  });
  return out;
}

// OK when some member answered; else the first member's error (UNAVAILABLE for none).
template <typename T>
absl::Status AnyAnswered(const Answers<T>& answers) {
  for (const auto& a : answers) {
    if (a.ok()) return absl::OkStatus();
  }
  if (answers.empty()) return absl::UnavailableError("the cluster has no members");
  return answers.front().status();
}

// An answer that a member refused for a reason every member would share (a bad argument,
// no permission), as opposed to a member that could not be reached.
template <typename T>
absl::Status FirstRefusal(const Answers<T>& answers) {
  for (const auto& a : answers) {
    if (!a.ok() && !IsMemberFailure(a.status())) return a.status();
  }
  return absl::OkStatus();
}

void AddStats(const ServerStats& s, ServerStats* out) {
#define KVSTASH_ADD_STAT(name, ...) out->name += s.name;
#define KVSTASH_ADD_TIER(tier, name) out->tier##_##name += s.tier##_##name;
#define KVSTASH_ADD_NVME(name, client, ...) out->client += s.client;
  KVSTASH_STORE_COUNTERS(KVSTASH_ADD_STAT)
  KVSTASH_SERVER_TIER_FIELDS(KVSTASH_ADD_TIER)
  KVSTASH_NVME_COUNTERS(KVSTASH_ADD_NVME)
#undef KVSTASH_ADD_STAT
#undef KVSTASH_ADD_TIER
#undef KVSTASH_ADD_NVME
}

}  // namespace

std::vector<MemberConn*> ClusterView::Owners(const Key128& key, size_t n) const {
  std::vector<MemberConn*> out;
  if (current.empty()) return out;
  for (uint32_t i : current.Owners(key, n)) out.push_back(conns[i].get());
  return out;
}

MemberConnPtr ClusterView::SharedOf(const MemberConn* conn) const {
  for (const MemberConnPtr& c : conns) {
    if (c.get() == conn) return c;
  }
  return previous != nullptr ? previous->SharedOf(conn) : nullptr;
}

absl::StatusOr<std::unique_ptr<Client>> ClusterClient::Connect(absl::string_view uri,
                                                               const ClientOptions& options) {
  absl::StatusOr<ClusterUri> parsed = ParseClusterUri(uri);
  if (!parsed.ok()) return parsed.status();
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = options.cluster.Validate(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<cluster::MemberSource>> source =
      MakeSource(*parsed, options.cluster);
  if (!source.ok()) return source.status();
  absl::StatusOr<std::unique_ptr<ClusterClient>> client = Create(*std::move(source), options);
  if (!client.ok()) return client.status();
  return std::unique_ptr<Client>(*std::move(client));
}

absl::StatusOr<std::unique_ptr<ClusterClient>> ClusterClient::Create(
    std::unique_ptr<cluster::MemberSource> source, const ClientOptions& options) {
  std::unique_ptr<ClusterClient> client(new ClusterClient(std::move(source), options));
  absl::Status s = client->source_->Start(
      [c = client.get()](const std::vector<cluster::Member>& members) { c->OnMembers(members); },
      absl::Milliseconds(options.connect_timeout_ms));
  if (!s.ok()) return s;
  return client;
}

ClusterClient::ClusterClient(std::unique_ptr<cluster::MemberSource> source,
                             const ClientOptions& options)
    : options_(options),
      source_(std::move(source)),
      view_(std::make_shared<ClusterView>()),
      executor_(options.async_threads) {}

// The source goes first: its thread calls OnMembers, which uses everything else.
ClusterClient::~ClusterClient() { source_.reset(); }

std::shared_ptr<const ClusterView> ClusterClient::view() const {
  absl::MutexLock lock(&mu_);
  return view_;
}

MemberConnPtr ClusterClient::MakeConn(const cluster::Member& member) {
  return std::make_shared<MemberConn>(
      member, options_, [this](Client& c) { return InitMember(c); },
      [this](Client& c, const Key128& ns) { return OpenOnMember(c, ns); });
}

void ClusterClient::OnMembers(const std::vector<cluster::Member>& members) {
  auto next = std::make_shared<ClusterView>();
  next->current = cluster::Placement(members);
  absl::MutexLock lock(&mu_);
  absl::flat_hash_map<std::string, MemberConnPtr> conns;
  for (const cluster::Member& m : next->current.members()) {
    auto it = conns_.find(m.id);
    // A member whose address changed (restarted elsewhere) gets a fresh connection.
    MemberConnPtr conn = it != conns_.end() && it->second->member() == m ? it->second : MakeConn(m);
    next->conns.push_back(conn);
    conns[m.id] = std::move(conn);
  }
  if (member_sets_++ > 0 && options_.cluster.handover_ms > 0) {
    // Only the placement before this change is kept: one hand-over at a time.
    auto previous = std::make_shared<ClusterView>();
    previous->current = view_->current;
    previous->conns = view_->conns;
    next->previous = std::move(previous);
    next->handover_until = absl::Now() + absl::Milliseconds(options_.cluster.handover_ms);
  }
  conns_ = std::move(conns);
  view_ = std::move(next);
}

absl::Status ClusterClient::InitMember(Client& client) {
  absl::flat_hash_map<const void*, size_t> memory;
  {
    absl::MutexLock lock(&mu_);
    memory = memory_;
  }
  for (const auto& [data, size] : memory) {
    if (absl::Status s = client.RegisterMemory(data, size); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ClusterClient::OpenOnMember(Client& client, const Key128& ns) {
  Namespace spec;
  {
    absl::MutexLock lock(&mu_);
    auto it = namespaces_.find(ns);
    if (it == namespaces_.end()) return absl::NotFoundError("namespace not opened here");
    spec = it->second;
  }
  return client.OpenNamespace(spec).status();
}

absl::StatusOr<NamespaceHandle> ClusterClient::OpenNamespace(const Namespace& spec) {
  if (absl::Status s = spec.Validate(); !s.ok()) return s;
  const NamespaceHandle handle{spec.Id()};
  {
    absl::MutexLock lock(&mu_);
    namespaces_.insert_or_assign(handle.id, spec);
  }
  std::shared_ptr<const ClusterView> v = view();
  // Begin registers the spec on each member; members reached later get it on first use.
  for (const MemberConnPtr& conn : v->conns) conn->ForgetNamespace(handle.id);
  Answers<bool> answers =
      OnEveryMember<bool>(*v, &handle.id, [](Client&) -> absl::StatusOr<bool> { return true; });
  if (absl::Status s = FirstRefusal(answers); !s.ok()) return s;
  if (absl::Status s = AnyAnswered(answers); !s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("no cluster member could register the namespace: ", s.message()));
  }
  return handle;
}

std::future<absl::Status> ClusterClient::PutAsync(NamespaceHandle ns, absl::Span<PutItem> items) {
  return executor_.Submit([this, ns, items] { return Put(ns, items); });
}

std::future<absl::Status> ClusterClient::GetAsync(NamespaceHandle ns, absl::Span<GetItem> items,
                                                  uint64_t lease_id) {
  return executor_.Submit([this, ns, items, lease_id] { return Get(ns, items, lease_id); });
}

void ClusterClient::RunAsync(std::function<void()> task) { executor_.Post(std::move(task)); }

absl::StatusOr<ServerStats> ClusterClient::Stats(const NamespaceHandle* ns) {
  std::shared_ptr<const ClusterView> v = view();
  Answers<ServerStats> answers = OnEveryMember<ServerStats>(
      *v, ns != nullptr ? &ns->id : nullptr, [ns](Client& c) { return c.Stats(ns); });
  if (absl::Status s = AnyAnswered(answers); !s.ok()) return s;
  ServerStats out;
  for (const auto& a : answers) {
    if (a.ok()) AddStats(*a, &out);
  }
  return out;
}

absl::StatusOr<HealthInfo> ClusterClient::Health() {
  std::shared_ptr<const ClusterView> v = view();
  Answers<HealthInfo> answers =
      OnEveryMember<HealthInfo>(*v, nullptr, [](Client& c) { return c.Health(); });
  if (absl::Status s = AnyAnswered(answers); !s.ok()) return s;
  HealthInfo out;
  for (const auto& a : answers) {
    if (!a.ok() || (out.serving && !a->serving)) continue;
    if (a->serving && !out.serving) out = *a;  // the first serving member's version
    out.uptime_ms = std::max(out.uptime_ms, a->uptime_ms);
    if (out.version.empty()) out.version = a->version;
  }
  return out;
}

absl::StatusOr<std::vector<NamespaceUsage>> ClusterClient::ListNamespaces() {
  std::shared_ptr<const ClusterView> v = view();
  Answers<std::vector<NamespaceUsage>> answers = OnEveryMember<std::vector<NamespaceUsage>>(
      *v, nullptr, [](Client& c) { return c.ListNamespaces(); });
  if (absl::Status s = AnyAnswered(answers); !s.ok()) return s;
  absl::flat_hash_map<Key128, NamespaceUsage> merged;
  for (const auto& a : answers) {
    if (!a.ok()) continue;
    for (const NamespaceUsage& u : *a) {
      auto [it, inserted] = merged.try_emplace(u.id, u);
      if (inserted) continue;
      NamespaceUsage& m = it->second;
      if (!m.registered && u.registered) {
        m.registered = true;
        m.spec = u.spec;
        m.tenant = u.tenant;
      }
      m.dram_chunks += u.dram_chunks;
      m.dram_bytes += u.dram_bytes;
      m.nvme_chunks += u.nvme_chunks;
      m.nvme_bytes += u.nvme_bytes;
      m.pinned_bytes += u.pinned_bytes;
    }
  }
  std::vector<NamespaceUsage> out;
  for (auto& [id, u] : merged) out.push_back(std::move(u));
  std::sort(out.begin(), out.end(),
            [](const NamespaceUsage& a, const NamespaceUsage& b) { return a.id < b.id; });
  return out;
}

absl::StatusOr<uint64_t> ClusterClient::ClearNamespace(NamespaceHandle ns) {
  std::shared_ptr<const ClusterView> v = view();
  Answers<uint64_t> answers =
      OnEveryMember<uint64_t>(*v, &ns.id, [ns](Client& c) { return c.ClearNamespace(ns); });
  uint64_t cleared = 0;
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i].ok()) {
      // A member left holding its chunks must not look cleared.
      return absl::Status(answers[i].status().code(),
                          absl::StrCat("cluster member ", v->conns[i]->member().id,
                                       " was not cleared: ", answers[i].status().message()));
    }
    cleared += *answers[i];
  }
  return cleared;
}

absl::Status ClusterClient::EndSession(NamespaceHandle ns, uint64_t session_id) {
  if (session_id == 0) return absl::InvalidArgumentError("session_id must not be 0");
  std::shared_ptr<const ClusterView> v = view();
  Answers<bool> answers = OnEveryMember<bool>(*v, &ns.id, [&](Client& c) -> absl::StatusOr<bool> {
    absl::Status s = c.EndSession(ns, session_id);
    if (!s.ok()) return s;
    return true;
  });
  if (absl::Status s = FirstRefusal(answers); !s.ok()) return s;
  // A member that is down keeps the session until its own session timeout.
  return AnyAnswered(answers);
}

absl::StatusOr<ClusterStatus> ClusterClient::Cluster() {
  std::shared_ptr<const ClusterView> v = view();
  ClusterStatus out;
  for (const MemberConnPtr& conn : v->conns) out.members.push_back(conn->Status());
  {
    absl::MutexLock lock(&mu_);
    out.member_set_changes = member_sets_ > 0 ? member_sets_ - 1 : 0;
  }
  out.keys_moved = keys_moved_.load(std::memory_order_relaxed);
  out.source_connected = source_->stats().connected;
  return out;
}

absl::Status ClusterClient::RegisterMemory(const void* data, size_t size) {
  if (data == nullptr || size == 0) return absl::InvalidArgumentError("empty memory range");
  {
    absl::MutexLock lock(&mu_);
    memory_[data] = size;
  }
  // Members connected from now on register it in InitMember; these already are.
  std::shared_ptr<const ClusterView> v = view();
  for (const MemberConnPtr& conn : v->conns) {
    if (Client* c = conn->connected(); c != nullptr) {
      if (absl::Status s = c->RegisterMemory(data, size); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ClusterClient::UnregisterMemory(const void* data) {
  {
    absl::MutexLock lock(&mu_);
    if (memory_.erase(data) == 0) return absl::NotFoundError("memory range not registered");
  }
  std::shared_ptr<const ClusterView> v = view();
  for (const MemberConnPtr& conn : v->conns) {
    if (Client* c = conn->connected(); c != nullptr) c->UnregisterMemory(data).IgnoreError();
  }
  return absl::OkStatus();
}

}  // namespace kvstash::client_internal
