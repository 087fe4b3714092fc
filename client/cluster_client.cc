// ClusterClient: connecting, following the member set, namespaces, memory ranges, and the
// calls that go to every member (admin, stats, health). The data calls are in
// cluster_data.cc.
#include "client/cluster_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/fan_out.h"
#include "client/grpc_tls.h"
#include "client/uri.h"
#include "kvstash/tier_entries.h"

namespace kvstash::client_internal {
namespace {

absl::StatusOr<std::unique_ptr<cluster::MemberSource>> MakeSource(const ClusterUri& uri,
                                                                  const ClusterOptions& options) {
  TlsChannelFiles etcd_files;
  etcd_files.ca = {options.etcd_ca_file, "ClientOptions.cluster.etcd_ca_file"};
  etcd_files.cert = {options.etcd_cert_file, "ClientOptions.cluster.etcd_cert_file"};
  etcd_files.key = {options.etcd_key_file, "ClientOptions.cluster.etcd_key_file"};
  if (uri.scheme != ClusterScheme::kEtcd && etcd_files.any()) {
    return absl::InvalidArgumentError(
        "ClientOptions.cluster.etcd_*_file: only etcd:// and etcds:// URIs reach etcd");
  }
  switch (uri.scheme) {
    case ClusterScheme::kEtcd: {
      cluster::EtcdOptions etcd;
      etcd.endpoints = uri.addresses;
      etcd.tls = uri.tls || etcd_files.any();
      etcd.tls_files = etcd_files;
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

// Makes `call` on every member of `conns` at once.
template <typename T, typename Call>
Answers<T> OnEveryMember(FanOutPool& pool, const std::vector<MemberConnPtr>& conns,
                         const Key128* ns, absl::Time deadline, Call call) {
  Answers<T> out(conns.size(), absl::UnavailableError("not asked"));
  pool.Run(conns.size(), [&](size_t i) {
    MemberConn& conn = *conns[i];
    absl::StatusOr<Client*> client = conn.Begin(ns, deadline);
    if (!client.ok()) {
      out[i] = client.status();
      return;
    }
    out[i] = call(**client);
    conn.Done(out[i].status());
  });
  return out;
}

// The members of `view`, then those of its hand-over's previous view not among them.
std::vector<MemberConnPtr> WithPrevious(const ClusterView& view, absl::Time now) {
  std::vector<MemberConnPtr> out = view.conns;
  if (const ClusterView* previous = view.Handover(now); previous != nullptr) {
    for (const MemberConnPtr& c : previous->conns) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
  }
  return out;
}

// A view of `placement` whose members are the connections of now where they are still
// members (by id), else `old_conns` (the connections `placement` had).
std::shared_ptr<ClusterView> Rebind(const cluster::Placement& placement,
                                    const std::vector<MemberConnPtr>& old_conns,
                                    const absl::flat_hash_map<std::string, MemberConnPtr>& now) {
  auto out = std::make_shared<ClusterView>();
  out->current = placement;
  for (size_t i = 0; i < placement.members().size(); ++i) {
    auto it = now.find(placement.members()[i].id);
    out->conns.push_back(it != now.end() ? it->second : old_conns[i]);
  }
  return out;
}

bool SameIds(const cluster::Placement& a, const cluster::Placement& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.members()[i].id != b.members()[i].id) return false;
  }
  return true;
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
#define KVSTASH_ADD_TIER(name, ...) into.name += t.name;
#define KVSTASH_ADD_NVME(name, client, ...) out->client += s.client;
  KVSTASH_STORE_COUNTERS(KVSTASH_ADD_STAT)
  for (const ServerTierStats& tier : s.tiers) {
    MergeTierEntry(tier, &out->tiers, [](ServerTierStats& into, const ServerTierStats& t) {
      KVSTASH_TIER_STATS(KVSTASH_ADD_TIER)
    });
  }
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
  // Up front: otherwise every member's connect would fail and reach the engine as misses.
  if (options.cluster.transport == "ucx") {
    if (absl::Status s = CheckNoTlsOptions(options, "ucx"); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<cluster::MemberSource>> source =
      MakeSource(*parsed, options.cluster);
  if (!source.ok()) return source.status();
  absl::StatusOr<std::unique_ptr<ClusterClient>> client = Create(*std::move(source), options);
  if (!client.ok()) return client.status();
  return std::unique_ptr<Client>(*std::move(client));
}

absl::StatusOr<std::unique_ptr<ClusterClient>> ClusterClient::Create(
    std::unique_ptr<cluster::MemberSource> source, const ClientOptions& options,
    MemberConn::ConnectFn connect) {
  std::unique_ptr<ClusterClient> client(
      new ClusterClient(std::move(source), options, std::move(connect)));
  absl::Status s = client->source_->Start(
      [c = client.get()](const std::vector<cluster::Member>& members) { c->OnMembers(members); },
      absl::Milliseconds(options.connect_timeout_ms));
  if (!s.ok()) return s;
  return client;
}

ClusterClient::ClusterClient(std::unique_ptr<cluster::MemberSource> source,
                             const ClientOptions& options, MemberConn::ConnectFn connect)
    : options_(options),
      connect_(std::move(connect)),
      source_(std::move(source)),
      view_(std::make_shared<ClusterView>()),
      executor_(options.async_threads) {}

// The source goes first: its thread calls OnMembers, which uses everything else.
ClusterClient::~ClusterClient() { source_.reset(); }

absl::Time ClusterClient::CallDeadline() const {
  // Two node deadlines: a member that times out still leaves time to ask its replica.
  return absl::Now() + 2 * absl::Milliseconds(options_.cluster.node_deadline_ms);
}

std::shared_ptr<const ClusterView> ClusterClient::view() const {
  absl::MutexLock lock(&mu_);
  return view_;
}

MemberConnPtr ClusterClient::MakeConn(const cluster::Member& member) {
  return std::make_shared<MemberConn>(
      member, options_, [this](Client& c) { return InitMember(c); },
      [this](Client& c, const Key128& ns) { return OpenOnMember(c, ns); }, connect_);
}

void ClusterClient::OnMembers(const std::vector<cluster::Member>& members) {
  auto next = std::make_shared<ClusterView>();
  next->current = cluster::Placement(members);
  // Dropped after mu_ is released: tearing connections down may take a while.
  std::shared_ptr<const ClusterView> old_view;
  absl::flat_hash_map<std::string, MemberConnPtr> old_conns;
  {
    absl::MutexLock lock(&mu_);
    absl::flat_hash_map<std::string, MemberConnPtr> conns;
    for (const cluster::Member& m : next->current.members()) {
      auto it = conns_.find(m.id);
      // Same address: the connection stays (its client re-registers namespaces after a
      // restart); a member that moved gets a fresh one.
      const bool keep =
          it != conns_.end() && it->second->uri() == MemberUri(m, options_.cluster.transport);
      MemberConnPtr conn = keep ? it->second : MakeConn(m);
      next->conns.push_back(conn);
      conns[m.id] = std::move(conn);
    }
    const bool ids_changed = member_sets_++ > 0 && !SameIds(view_->current, next->current);
    if (options_.cluster.handover_ms > 0 && ids_changed) {
      // Only the placement before this change is kept: one hand-over at a time.
      next->previous = Rebind(view_->current, view_->conns, conns);
      next->handover_until = absl::Now() + absl::Milliseconds(options_.cluster.handover_ms);
    } else if (view_->previous != nullptr) {
      // Same ids (a restart, new capacities): the hand-over in progress goes on.
      next->previous = Rebind(view_->previous->current, view_->previous->conns, conns);
      next->handover_until = view_->handover_until;
    }
    old_view = std::exchange(view_, std::move(next));
    old_conns = std::exchange(conns_, std::move(conns));
  }
  pool_.EnsureThreads(members.size());
}

absl::Status ClusterClient::InitMember(Client& client) {
  absl::flat_hash_map<const void*, size_t> memory;
  {
    absl::MutexLock lock(&mu_);
    memory = memory_;
  }
  // Every range is tried: one the member refuses leaves its calls on unregistered buffers.
  absl::Status first;
  for (const auto& [data, size] : memory) first.Update(client.RegisterMemory(data, size));
  return first;
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
  // No members yet: the spec is registered on each as it is first used.
  if (v->conns.empty()) return handle;
  // Begin registers the spec on each member; members reached later get it on first use.
  for (const MemberConnPtr& conn : v->conns) conn->ForgetNamespace(handle.id);
  Answers<bool> answers = OnEveryMember<bool>(pool_, v->conns, &handle.id, CallDeadline(),
                                              [](Client&) -> absl::StatusOr<bool> { return true; });
  if (absl::Status s = FirstRefusal(answers); !s.ok()) {
    // A spec a member refuses must not be registered behind the caller's back later.
    absl::MutexLock lock(&mu_);
    namespaces_.erase(handle.id);
    return s;
  }
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
  Answers<ServerStats> answers =
      OnEveryMember<ServerStats>(pool_, v->conns, ns != nullptr ? &ns->id : nullptr, CallDeadline(),
                                 [ns](Client& c) { return c.Stats(ns); });
  if (absl::Status s = AnyAnswered(answers); !s.ok()) return s;
  ServerStats out;
  for (const auto& a : answers) {
    if (a.ok()) AddStats(*a, &out);
  }
  return out;
}

absl::StatusOr<HealthInfo> ClusterClient::Health() {
  std::shared_ptr<const ClusterView> v = view();
  Answers<HealthInfo> answers = OnEveryMember<HealthInfo>(pool_, v->conns, nullptr, CallDeadline(),
                                                          [](Client& c) { return c.Health(); });
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
      pool_, v->conns, nullptr, CallDeadline(), [](Client& c) { return c.ListNamespaces(); });
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
      for (const TierUsage& tier : u.tiers) {
        MergeTierEntry(tier, &m.tiers, [](TierUsage& into, const TierUsage& t) {
          into.chunks += t.chunks;
          into.bytes += t.bytes;
        });
      }
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
  // Previous owners too: lookups still ask them while the hand-over lasts.
  const std::vector<MemberConnPtr> conns = WithPrevious(*v, absl::Now());
  Answers<uint64_t> answers = OnEveryMember<uint64_t>(
      pool_, conns, &ns.id, CallDeadline(), [ns](Client& c) { return c.ClearNamespace(ns); });
  uint64_t cleared = 0;
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i].ok()) {
      // A member left holding its chunks must not look cleared.
      return absl::Status(answers[i].status().code(),
                          absl::StrCat("cluster member ", conns[i]->member().id,
                                       " was not cleared: ", answers[i].status().message()));
    }
    cleared += *answers[i];
  }
  return cleared;
}

absl::Status ClusterClient::EndSession(NamespaceHandle ns, uint64_t session_id) {
  if (session_id == 0) return absl::InvalidArgumentError("session_id must not be 0");
  std::shared_ptr<const ClusterView> v = view();
  Answers<bool> answers = OnEveryMember<bool>(pool_, v->conns, &ns.id, CallDeadline(),
                                              [&](Client& c) -> absl::StatusOr<bool> {
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
  if (absl::Status s = Client::RegisterMemory(data, size); !s.ok()) return s;  // the range rule
  absl::MutexLock memory_lock(&memory_mu_);
  {
    absl::MutexLock lock(&mu_);
    memory_[data] = size;
  }
  // Members connecting from now on register it in InitMember; WithConnected waits for a
  // connect in progress, so no connection misses the range.
  const std::vector<MemberConnPtr> conns = WithPrevious(*view(), absl::Now());
  for (size_t i = 0; i < conns.size(); ++i) {
    absl::Status s =
        conns[i]->WithConnected([&](Client& c) { return c.RegisterMemory(data, size); });
    // ALREADY_EXISTS: the member connected meanwhile and got the range in InitMember.
    if (s.ok() || absl::IsAlreadyExists(s)) continue;
    // Nothing registered: later connections must not replay a range a member refuses.
    {
      absl::MutexLock lock(&mu_);
      memory_.erase(data);
    }
    for (size_t k = 0; k < i; ++k) {
      conns[k]->WithConnected([&](Client& c) { return c.UnregisterMemory(data); }).IgnoreError();
    }
    return s;
  }
  return absl::OkStatus();
}

absl::Status ClusterClient::UnregisterMemory(const void* data) {
  absl::MutexLock memory_lock(&memory_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (memory_.erase(data) == 0) return absl::NotFoundError("memory range not registered");
  }
  for (const MemberConnPtr& conn : WithPrevious(*view(), absl::Now())) {
    conn->WithConnected([&](Client& c) { return c.UnregisterMemory(data); }).IgnoreError();
  }
  return absl::OkStatus();
}

}  // namespace kvstash::client_internal
