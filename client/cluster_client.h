// ClusterClient: the Client of a cluster URI (etcd://, static://, dns://). It follows the
// member set (cluster::MemberSource), places every chunk key on its owner by rendezvous
// hashing (cluster::Placement) and sends each call's keys straight to their owners, one
// call per member, members in parallel, over a Client of each member's own. A member that
// fails turns its keys into misses; its circuit breaker then skips it until a probe call
// succeeds. client/README.md, "Cluster", states the semantics of each call.
//
// Thread-safety: thread-safe; every call may run concurrently with every other and with
// member-set changes (the listener swaps an immutable View under a mutex).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/cluster_leases.h"
#include "client/cluster_member.h"
#include "client/executor.h"
#include "client/fan_out.h"
#include "cluster/member_source.h"
#include "cluster/placement.h"
#include "kvstash/client.h"

namespace kvstash::client_internal {

class Refusals;

// The member set one call works with: the placement, the members' connections, and during
// a hand-over the previous placement. Immutable.
struct ClusterView {
  cluster::Placement current{std::vector<cluster::Member>()};
  std::vector<MemberConnPtr> conns;  // conns[i] serves current.members()[i]
  // Until handover_until: the placement before the last change, and its connections.
  std::shared_ptr<const ClusterView> previous;
  absl::Time handover_until = absl::InfinitePast();

  // The previous view while its hand-over lasts at `now`, else null.
  const ClusterView* Handover(absl::Time now) const {
    return previous != nullptr && now < handover_until ? previous.get() : nullptr;
  }
  // The first `n` owners of `key`, best first.
  std::vector<MemberConn*> Owners(const Key128& key, size_t n) const;
  // The shared pointer of a connection of this view or its previous one.
  MemberConnPtr SharedOf(const MemberConn* conn) const;
};

class ClusterClient final : public Client {
 public:
  // Connects to the cluster `uri` names. REQUIRES: IsClusterUri(uri). INVALID_ARGUMENT for
  // a malformed URI or options; UNAVAILABLE when no member set could be read within
  // connect_timeout_ms. Members are connected on first use, so a member that is down
  // does not fail Connect.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(absl::string_view uri,
                                                         const ClientOptions& options);
  // The same with a member source of the caller's (tests), and optionally how each
  // member's client is connected (null: Client::Connect). REQUIRES: options valid.
  static absl::StatusOr<std::unique_ptr<ClusterClient>> Create(
      std::unique_ptr<cluster::MemberSource> source, const ClientOptions& options,
      MemberConn::ConnectFn connect = nullptr);
  ~ClusterClient() override;

  absl::StatusOr<NamespaceHandle> OpenNamespace(const Namespace& spec) override;
  absl::StatusOr<LookupResult> Lookup(NamespaceHandle ns, absl::Span<const Key128> keys,
                                      uint32_t lease_ms, uint64_t session_id) override;
  absl::Status Put(NamespaceHandle ns, absl::Span<PutItem> items) override;
  absl::Status Get(NamespaceHandle ns, absl::Span<GetItem> items, uint64_t lease_id) override;
  std::future<absl::Status> PutAsync(NamespaceHandle ns, absl::Span<PutItem> items) override;
  std::future<absl::Status> GetAsync(NamespaceHandle ns, absl::Span<GetItem> items,
                                     uint64_t lease_id) override;
  void RunAsync(std::function<void()> task) override;
  absl::StatusOr<std::vector<ChunkTier>> Exists(NamespaceHandle ns,
                                                absl::Span<const Key128> keys) override;
  absl::StatusOr<uint32_t> Delete(NamespaceHandle ns, absl::Span<const Key128> keys) override;
  absl::StatusOr<ServerStats> Stats(const NamespaceHandle* ns) override;
  absl::StatusOr<HealthInfo> Health() override;
  absl::StatusOr<std::vector<NamespaceUsage>> ListNamespaces() override;
  absl::StatusOr<uint64_t> ClearNamespace(NamespaceHandle ns) override;
  absl::StatusOr<uint32_t> Pin(NamespaceHandle ns, absl::Span<const Key128> keys,
                               bool pin) override;
  absl::Status EndSession(NamespaceHandle ns, uint64_t session_id) override;
  absl::StatusOr<ClusterStatus> Cluster() override;
  absl::Status RegisterMemory(const void* data, size_t size) override;
  absl::Status UnregisterMemory(const void* data) override;

 private:
  // Where each key of a Lookup was found: the member, its tier, and the member's lease.
  struct Located {
    uint32_t hit_count = 0;
    std::vector<MemberConn*> where;  // per key < hit_count
    std::vector<ChunkTier> tiers;    // per key < hit_count
    std::vector<uint64_t> leases;    // per key < hit_count: the lease of `where` covering it
  };

  ClusterClient(std::unique_ptr<cluster::MemberSource> source, const ClientOptions& options,
                MemberConn::ConnectFn connect);

  // The time budget of one cluster call: no member call starts after it, so a call returns
  // within about one node deadline more, however many rounds and members it takes.
  absl::Time CallDeadline() const;
  std::shared_ptr<const ClusterView> view() const;
  // The listener: a new placement, connections kept for members that stay.
  void OnMembers(const std::vector<cluster::Member>& members);
  MemberConnPtr MakeConn(const cluster::Member& member);
  // MemberConn's hooks: replay memory ranges on a new connection; register a namespace.
  absl::Status InitMember(Client& client);
  absl::Status OpenOnMember(Client& client, const Key128& ns);

  // Lookup's work; the pointers returned live as long as `view`. `refusal`: set when
  // every member asked refused (Refusals).
  Located Locate(const ClusterView& view, const Key128& ns, absl::Span<const Key128> keys,
                 uint32_t lease_ms, uint64_t session_id, absl::Time deadline,
                 absl::Status* refusal);
  // Get's rounds: each item from its next candidate until found or none is left.
  absl::Status GetRounds(const ClusterView& view, NamespaceHandle ns, absl::Span<GetItem> items,
                         const LeaseTable::Entry* lease, absl::Time deadline);
  // One member Get of items idx[k] for k in `part`, under `member_lease`; sets their
  // results and resolved[k] for each that needs no other candidate.
  void GetFrom(MemberConn* conn, NamespaceHandle ns, uint64_t member_lease, absl::Time deadline,
               const ClusterView& view, absl::Span<GetItem> items, absl::Span<const size_t> idx,
               const std::vector<size_t>& part, absl::Span<uint8_t> resolved,
               std::vector<MemberConn*>* found_on, std::vector<uint8_t>* owner_missed,
               Refusals* refusals);
  // After a Get: copies chunks found off their owner to it (read-repair), and chunks that
  // just became hot to their other replicas.
  void CopyFound(const ClusterView& view, NamespaceHandle ns, absl::Span<GetItem> items,
                 const std::vector<MemberConn*>& found_on,
                 const std::vector<uint8_t>& owner_missed);
  // Copies fetched chunks to `to` in the background with `hints` (their bytes are copied
  // first); a chunk whose bytes do not match its checksum is not copied.
  void CopyInBackground(NamespaceHandle ns, MemberConnPtr to,
                        const std::vector<const GetItem*>& items, const PutHints& hints);
  // Counts a fetch of `key`; true exactly when it becomes hot (hot_fetches reached).
  bool CountFetch(const Key128& key);

  const ClientOptions options_;
  const MemberConn::ConnectFn connect_;
  std::unique_ptr<cluster::MemberSource> source_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const ClusterView> view_ ABSL_GUARDED_BY(mu_);
  // Connections by member id, reused across member sets.
  absl::flat_hash_map<std::string, MemberConnPtr> conns_ ABSL_GUARDED_BY(mu_);
  uint64_t member_sets_ ABSL_GUARDED_BY(mu_) = 0;
  // Namespaces opened through this client, registered on members as they are first used.
  absl::flat_hash_map<Key128, Namespace> namespaces_ ABSL_GUARDED_BY(mu_);
  // RegisterMemory ranges, replayed on members connected later.
  absl::flat_hash_map<const void*, size_t> memory_ ABSL_GUARDED_BY(mu_);
  absl::Mutex fetch_mu_;
  absl::flat_hash_map<Key128, uint32_t> fetch_counts_ ABSL_GUARDED_BY(fetch_mu_);
  std::atomic<uint64_t> keys_moved_{0};
  LeaseTable leases_;
  // Held while memory ranges are registered on members, so none is missed or left behind.
  absl::Mutex memory_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Runs the member calls of each fan-out; grows with the member set.
  FanOutPool pool_;
  // Declared last so it is destroyed first: queued async calls and background copies
  // finish while everything they use still exists.
  Executor executor_;
};

}  // namespace kvstash::client_internal
