// ClusterClient's data calls: each key goes to its owner (the next replica where that
// member fails, the previous owner during a hand-over), one call per member, members in
// parallel. A member that fails or refuses makes its keys misses; only a refusal from
// every member asked (a bad argument, no permission) fails the call. Delete and Pin are in
// cluster_copies.cc.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/cluster_client.h"
#include "client/cluster_routing.h"
#include "client/item_checks.h"

namespace kvstash::client_internal {
namespace {

bool IsHot(const PutHints& hints) { return hints.priority == Priority::kHigh || hints.pin; }

// The arguments of a cluster Lookup that every member's call shares.
struct LookupCall {
  const Key128& ns;
  absl::Span<const Key128> keys;
  uint32_t lease_ms;
  uint64_t session_id;
};

// What a cluster Lookup learned so far, per key. Member calls running at once write
// disjoint keys.
struct LookupState {
  explicit LookupState(size_t n)
      : found(n, nullptr), tiers(n, ChunkTier::kNone), leases(n, 0), cursor(n, 0) {}
  size_t FirstMissing() const {
    return static_cast<size_t>(std::find(found.begin(), found.end(), nullptr) - found.begin());
  }

  std::vector<MemberConn*> found;  // the member that has the key, null while unknown
  std::vector<ChunkTier> tiers;
  std::vector<uint64_t> leases;  // the lease of `found` that covers the key
  std::vector<size_t> cursor;    // the candidate to ask next
  Refusals refusals;
};

// One Lookup per group's member, all at once. A member's hit_count covers the leading keys
// of its own share: those are present, the next is not (its cursor moves on), the rest
// are unknown (asked of the same member again). A member that fails or refuses moves all
// of its keys on.
void RunLookups(FanOutPool& pool, const LookupCall& call, const Groups& groups, absl::Time deadline,
                LookupState* state) {
  pool.Run(groups.size(), [&](size_t g) {
    MemberConn* conn = groups.conns[g];
    std::vector<Key128> sub;
    for (size_t i : groups.indices[g]) sub.push_back(call.keys[i]);
    LookupResult r;
    absl::Status s = CallMember(conn, call.ns, deadline, [&](Client& c) {
      absl::StatusOr<LookupResult> lr = c.Lookup({call.ns}, sub, call.lease_ms, call.session_id);
      if (lr.ok()) r = *std::move(lr);
      return lr.status();
    });
    state->refusals.Note(s);
    for (size_t k = 0; k < sub.size(); ++k) {
      const size_t i = groups.indices[g][k];
      if (s.ok() && k < r.hit_count) {
        state->found[i] = conn;
        state->tiers[i] = k < r.tiers.size() ? r.tiers[k] : ChunkTier::kNone;
        state->leases[i] = r.lease_id;
      } else if (!s.ok() || k == r.hit_count) {
        ++state->cursor[i];
      }
    }
  });
}

// The next round of a Lookup: each key from the first miss on that is not found, at its
// next candidate whose breaker is not open, up to the first key no candidate is left for
// (no later key can count). *moved counts the keys asked of a previous owner.
Groups NextRound(const std::vector<Candidates>& cands, size_t owners, bool handover,
                 LookupState* state, uint64_t* moved) {
  Groups out;
  for (size_t i = state->FirstMissing(); i < cands.size(); ++i) {
    if (state->found[i] != nullptr) continue;
    size_t& cursor = state->cursor[i];
    while (cursor < cands[i].size() && cands[i][cursor]->Skip()) ++cursor;
    if (cursor >= cands[i].size()) break;
    if (handover && cursor >= owners) ++*moved;
    out.Add(cands[i][cursor], i);
  }
  return out;
}

}  // namespace

ClusterClient::Located ClusterClient::Locate(const ClusterView& view, const Key128& ns,
                                             absl::Span<const Key128> keys, uint32_t lease_ms,
                                             uint64_t session_id, absl::Time deadline,
                                             absl::Status* refusal) {
  const ClusterView* previous = view.Handover(absl::Now());
  const size_t replicas = options_.cluster.replicas;
  // Each key's owners, then its previous owner: a key a replica holds (stored there while
  // its owner was down) or that has not moved yet is still found.
  std::vector<Candidates> cands;
  cands.reserve(keys.size());
  for (const Key128& key : keys) cands.push_back(CandidatesOf(view, previous, key, replicas));
  LookupState state(keys.size());
  const LookupCall call{ns, keys, lease_ms, session_id};
  const size_t owners = std::min(replicas, view.current.size());
  uint64_t moved = 0;
  while (absl::Now() < deadline) {
    Groups round = NextRound(cands, owners, previous != nullptr, &state, &moved);
    if (round.size() == 0) break;
    RunLookups(pool_, call, round, deadline, &state);
  }
  if (moved > 0) keys_moved_.fetch_add(moved, std::memory_order_relaxed);
  Located out;
  out.hit_count = static_cast<uint32_t>(state.FirstMissing());
  out.where.assign(state.found.begin(), state.found.begin() + out.hit_count);
  out.tiers.assign(state.tiers.begin(), state.tiers.begin() + out.hit_count);
  out.leases.assign(state.leases.begin(), state.leases.begin() + out.hit_count);
  *refusal = state.refusals.status();
  return out;
}

absl::StatusOr<LookupResult> ClusterClient::Lookup(NamespaceHandle ns,
                                                   absl::Span<const Key128> keys, uint32_t lease_ms,
                                                   uint64_t session_id) {
  std::shared_ptr<const ClusterView> v = view();
  if (keys.empty() || v->current.empty()) return LookupResult{};
  absl::Status refusal;
  Located loc = Locate(*v, ns.id, keys, lease_ms, session_id, CallDeadline(), &refusal);
  if (!refusal.ok()) return refusal;
  LookupResult out;
  out.hit_count = loc.hit_count;
  out.tiers = std::move(loc.tiers);
  if (lease_ms > 0 && loc.hit_count > 0) {
    // Each hit with the member lease that covers it; member leases covering no hit expire.
    LeaseTable::Entry entry;
    for (uint32_t i = 0; i < loc.hit_count; ++i) {
      entry.where[keys[i]] = {v->SharedOf(loc.where[i]), loc.leases[i]};
    }
    out.lease_id = leases_.Add(std::move(entry), absl::Now() + absl::Milliseconds(lease_ms));
  }
  return out;
}

absl::Status ClusterClient::Put(NamespaceHandle ns, absl::Span<PutItem> items) {
  if (absl::Status s = client_internal::CheckPutItems(items); !s.ok()) return s;
  std::shared_ptr<const ClusterView> v = view();
  Groups groups;
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].status = absl::UnavailableError("the cluster has no members");
    items[i].already_present = false;
    const size_t copies = IsHot(items[i].hints) ? options_.cluster.replicas : 1;
    for (MemberConn* c : v->Owners(items[i].key, copies)) groups.Add(c, i);
  }
  std::vector<std::vector<PutItem>> subs(groups.size());
  std::vector<absl::Status> results(groups.size());
  const absl::Time deadline = CallDeadline();
  pool_.Run(groups.size(), [&](size_t g) {
    for (size_t i : groups.indices[g]) subs[g].push_back(items[i]);
    results[g] = CallMember(groups.conns[g], ns.id, deadline,
                            [&](Client& c) { return c.Put(ns, absl::MakeSpan(subs[g])); });
  });
  // An item is stored when any of its owners stored it.
  std::vector<uint8_t> stored(items.size(), 0);
  Refusals refusals;
  for (size_t g = 0; g < groups.size(); ++g) {
    refusals.Note(results[g]);
    for (size_t k = 0; k < subs[g].size(); ++k) {
      PutItem& item = items[groups.indices[g][k]];
      if (stored[groups.indices[g][k]]) continue;
      if (!results[g].ok()) {
        // A member that failed: UNAVAILABLE; one that refused: its refusal.
        const absl::StatusCode code =
            IsMemberFailure(results[g]) ? absl::StatusCode::kUnavailable : results[g].code();
        item.status =
            absl::Status(code, absl::StrCat("cluster member ", groups.conns[g]->member().id, ": ",
                                            results[g].message()));
        continue;
      }
      item.status = subs[g][k].status;
      item.already_present = subs[g][k].already_present;
      stored[groups.indices[g][k]] = item.status.ok();
    }
  }
  return refusals.status();
}

absl::StatusOr<std::vector<ChunkTier>> ClusterClient::Exists(NamespaceHandle ns,
                                                             absl::Span<const Key128> keys) {
  std::shared_ptr<const ClusterView> v = view();
  std::vector<ChunkTier> out(keys.size(), ChunkTier::kNone);
  if (v->current.empty()) return out;
  const ClusterView* previous = v->Handover(absl::Now());
  std::vector<Candidates> cands;
  for (const Key128& key : keys) {
    cands.push_back(CandidatesOf(*v, previous, key, options_.cluster.replicas));
  }
  Refusals refusals;
  const absl::Time deadline = CallDeadline();
  RunRounds(pool_, cands, deadline,
            [&](MemberConn* conn, absl::Span<const size_t> idx, absl::Span<uint8_t> resolved) {
              std::vector<Key128> sub;
              for (size_t i : idx) sub.push_back(keys[i]);
              std::vector<ChunkTier> tiers;
              absl::Status s = CallMember(conn, ns.id, deadline, [&](Client& c) {
                absl::StatusOr<std::vector<ChunkTier>> r = c.Exists(ns, sub);
                if (r.ok()) tiers = *std::move(r);
                return r.status();
              });
              refusals.Note(s);
              for (size_t k = 0; s.ok() && k < idx.size() && k < tiers.size(); ++k) {
                out[idx[k]] = tiers[k];
                resolved[k] = tiers[k] != ChunkTier::kNone;
              }
            });
  if (absl::Status s = refusals.status(); !s.ok()) return s;
  return out;
}

}  // namespace kvstash::client_internal
