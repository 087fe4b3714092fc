// ClusterClient's calls on every copy of a key: Delete and Pin reach the owners, the
// replicas and, during a hand-over, the previous owner.
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "client/cluster_client.h"
#include "client/cluster_routing.h"

namespace kvstash::client_internal {
namespace {

// Which of each group's keys its member holds (one Exists per member, all at once);
// present[g][k] for groups.indices[g][k]. A member that does not answer holds none.
std::vector<std::vector<uint8_t>> Holdings(FanOutPool& pool, NamespaceHandle ns,
                                           absl::Span<const Key128> keys, const Groups& groups,
                                           absl::Time deadline, Refusals* refusals) {
  std::vector<std::vector<uint8_t>> present(groups.size());
  pool.Run(groups.size(), [&](size_t g) {
    std::vector<Key128> sub;
    for (size_t i : groups.indices[g]) sub.push_back(keys[i]);
    present[g].assign(sub.size(), 0);
    refusals->Note(CallMember(groups.conns[g], ns.id, deadline, [&](Client& c) {
      absl::StatusOr<std::vector<ChunkTier>> r = c.Exists(ns, sub);
      if (!r.ok()) return r.status();
      for (size_t k = 0; k < sub.size() && k < r->size(); ++k) {
        present[g][k] = (*r)[k] != ChunkTier::kNone;
      }
      return absl::OkStatus();
    }));
  });
  return present;
}

}  // namespace

absl::StatusOr<uint32_t> ClusterClient::Delete(NamespaceHandle ns, absl::Span<const Key128> keys) {
  std::shared_ptr<const ClusterView> v = view();
  if (v->current.empty()) return 0u;
  const ClusterView* previous = v->Handover(absl::Now());
  // Every copy: the owners, the replicas, the previous owner.
  Groups groups;
  bool several = false;
  for (size_t i = 0; i < keys.size(); ++i) {
    Candidates cands = CandidatesOf(*v, previous, keys[i], options_.cluster.replicas);
    several = several || cands.size() > 1;
    for (MemberConn* c : cands) groups.Add(c, i);
  }
  const absl::Time deadline = CallDeadline();
  // Keys, not copies, are counted: with several copies, which keys exist is asked first.
  Refusals exists_refusals;
  std::vector<std::vector<uint8_t>> held;
  if (several) held = Holdings(pool_, ns, keys, groups, deadline, &exists_refusals);
  std::vector<uint32_t> deleted(groups.size(), 0);
  Refusals refusals;
  pool_.Run(groups.size(), [&](size_t g) {
    std::vector<Key128> sub;
    for (size_t i : groups.indices[g]) sub.push_back(keys[i]);
    refusals.Note(CallMember(groups.conns[g], ns.id, deadline, [&](Client& c) {
      absl::StatusOr<uint32_t> r = c.Delete(ns, sub);
      if (r.ok()) deleted[g] = *r;
      return r.status();
    }));
  });
  if (absl::Status s = refusals.status(); !s.ok()) return s;
  uint32_t copies = 0;
  for (uint32_t d : deleted) copies += d;
  if (!several) return copies;
  std::vector<uint8_t> existed(keys.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t k = 0; k < held[g].size(); ++k) existed[groups.indices[g][k]] |= held[g][k];
  }
  const uint32_t keys_held =
      static_cast<uint32_t>(std::count(existed.begin(), existed.end(), uint8_t{1}));
  return std::min(keys_held, copies);
}

absl::StatusOr<uint32_t> ClusterClient::Pin(NamespaceHandle ns, absl::Span<const Key128> keys,
                                            bool pin) {
  std::shared_ptr<const ClusterView> v = view();
  if (keys.empty() || v->current.empty()) return 0u;
  const absl::Time deadline = CallDeadline();
  // The leading keys present; each copy of them is pinned where it is.
  absl::Status refusal;
  Located loc = Locate(*v, ns.id, keys, /*lease_ms=*/0, /*session_id=*/0, deadline, &refusal);
  if (!refusal.ok()) return refusal;
  const ClusterView* previous = v->Handover(absl::Now());
  Groups all;
  for (uint32_t i = 0; i < loc.hit_count; ++i) {
    for (MemberConn* c : CandidatesOf(*v, previous, keys[i], options_.cluster.replicas)) {
      all.Add(c, i);
    }
  }
  // A member's Pin stops at the first key it lacks: each is sent only the keys it holds.
  Refusals exists_refusals;
  std::vector<std::vector<uint8_t>> held =
      Holdings(pool_, ns, keys, all, deadline, &exists_refusals);
  Groups groups;
  for (size_t g = 0; g < all.size(); ++g) {
    for (size_t k = 0; k < held[g].size(); ++k) {
      if (held[g][k]) groups.Add(all.conns[g], all.indices[g][k]);
    }
  }
  std::vector<uint32_t> changed(groups.size(), 0);
  std::vector<absl::Status> results(groups.size());
  auto pin_all = [&](bool to) {
    pool_.Run(groups.size(), [&](size_t g) {
      if (to != pin && !(results[g].ok() && changed[g] > 0)) return;  // undo only what changed
      std::vector<Key128> sub;
      for (size_t i : groups.indices[g]) sub.push_back(keys[i]);
      absl::Status s = CallMember(groups.conns[g], ns.id, deadline, [&](Client& c) {
        absl::StatusOr<uint32_t> r = c.Pin(ns, sub, to);
        if (r.ok() && to == pin) changed[g] = *r;
        return r.status();
      });
      if (to == pin) results[g] = s;
    });
  };
  pin_all(pin);
  uint32_t total = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (pin && absl::IsResourceExhausted(results[g])) {
      // The quota refused: nothing stays pinned (the Client::Pin contract).
      pin_all(false);
      return results[g];
    }
    total += changed[g];
  }
  // Keys, not copies: a key pinned on two replicas counts once.
  return std::min(total, loc.hit_count);
}

}  // namespace kvstash::client_internal
