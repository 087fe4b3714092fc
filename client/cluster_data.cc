// ClusterClient's data calls: each key goes to its owner (the next replica where that
// member fails, the previous owner during a hand-over), one call per member, members in
// parallel. A member that fails makes its keys misses; only refusals every member would
// share (a bad argument, no permission) fail the call.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/cluster_client.h"
#include "client/cluster_routing.h"
#include "client/fan_out.h"

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
// disjoint keys; member_leases is guarded.
struct LookupState {
  explicit LookupState(size_t n)
      : found(n, nullptr), tiers(n, ChunkTier::kNone), asked(n, nullptr), failed(n, 0) {}
  size_t FirstMissing() const {
    return static_cast<size_t>(std::find(found.begin(), found.end(), nullptr) - found.begin());
  }

  std::vector<MemberConn*> found;  // the member that has the key, null while unknown
  std::vector<ChunkTier> tiers;
  std::vector<MemberConn*> asked;  // the member asked last
  std::vector<uint8_t> failed;     // that member failed to answer
  Refusal refusals;
  absl::Mutex mu;
  std::vector<std::pair<MemberConn*, uint64_t>> member_leases ABSL_GUARDED_BY(mu);
};

// One Lookup per group's member, all at once. A member's hit_count covers the leading keys
// of its own share: those are present, the next is not, the rest are unknown.
void RunLookups(const LookupCall& call, const Groups& groups, LookupState* state) {
  FanOut(groups.size(), [&](size_t g) {
    MemberConn* conn = groups.conns[g];
    std::vector<Key128> sub;
    for (size_t i : groups.indices[g]) sub.push_back(call.keys[i]);
    LookupResult r;
    absl::Status s = CallMember(conn, call.ns, [&](Client& c) {
      absl::StatusOr<LookupResult> lr = c.Lookup({call.ns}, sub, call.lease_ms, call.session_id);
      if (lr.ok()) r = *std::move(lr);
      return lr.status();
    });
    state->refusals.Note(s);
    for (size_t k = 0; k < sub.size(); ++k) {
      const size_t i = groups.indices[g][k];
      state->asked[i] = conn;
      state->failed[i] = !s.ok();
      if (s.ok() && k < r.hit_count) {
        state->found[i] = conn;
        state->tiers[i] = k < r.tiers.size() ? r.tiers[k] : ChunkTier::kNone;
      }
    }
    if (s.ok() && r.lease_id != 0) {
      absl::MutexLock lock(&state->mu);
      state->member_leases.emplace_back(conn, r.lease_id);
    }
  });
}

// The keys from the first miss on worth asking again: of the next replica where the owner
// failed, of the previous owner where the key moved during a hand-over. *moved counts the
// keys asked of a previous owner.
Groups SecondRound(const ClusterView& view, const ClusterView* previous,
                   absl::Span<const Key128> keys, size_t replicas, const LookupState& state,
                   uint64_t* moved) {
  Groups out;
  for (size_t i = state.FirstMissing(); i < keys.size(); ++i) {
    if (state.found[i] != nullptr) continue;
    const size_t owners = state.failed[i] ? replicas : 1;
    Candidates cands = CandidatesOf(view, previous, keys[i], owners);
    auto next = std::find(cands.begin(), cands.end(), state.asked[i]);
    next = next == cands.end() ? cands.begin() : next + 1;
    while (next != cands.end() && (*next)->Skip()) ++next;
    if (next == cands.end()) continue;
    if (previous != nullptr && static_cast<size_t>(next - cands.begin()) >= owners) ++*moved;
    out.Add(*next, i);
  }
  return out;
}

}  // namespace

ClusterClient::Located ClusterClient::Locate(const ClusterView& view, const Key128& ns,
                                             absl::Span<const Key128> keys, uint32_t lease_ms,
                                             uint64_t session_id, absl::Status* refusal) {
  LookupState state(keys.size());
  const LookupCall call{ns, keys, lease_ms, session_id};
  const size_t replicas = options_.cluster.replicas;
  Groups first;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<MemberConn*> owners = view.Owners(keys[i], replicas);
    auto live =
        std::find_if(owners.begin(), owners.end(), [](MemberConn* c) { return !c->Skip(); });
    first.Add(live != owners.end() ? *live : owners[0], i);
  }
  RunLookups(call, first, &state);
  uint64_t moved = 0;
  Groups second = SecondRound(view, view.Handover(absl::Now()), keys, replicas, state, &moved);
  if (moved > 0) keys_moved_.fetch_add(moved, std::memory_order_relaxed);
  if (second.size() > 0) RunLookups(call, second, &state);
  Located out;
  out.hit_count = static_cast<uint32_t>(state.FirstMissing());
  out.where.assign(state.found.begin(), state.found.begin() + out.hit_count);
  out.tiers.assign(state.tiers.begin(), state.tiers.begin() + out.hit_count);
  {
    absl::MutexLock lock(&state.mu);
    out.member_leases = std::move(state.member_leases);
  }
  *refusal = state.refusals.status();
  return out;
}

absl::StatusOr<LookupResult> ClusterClient::Lookup(NamespaceHandle ns,
                                                   absl::Span<const Key128> keys, uint32_t lease_ms,
                                                   uint64_t session_id) {
  std::shared_ptr<const ClusterView> v = view();
  if (keys.empty() || v->current.empty()) return LookupResult{};
  absl::Status refusal;
  Located loc = Locate(*v, ns.id, keys, lease_ms, session_id, &refusal);
  if (!refusal.ok()) return refusal;
  LookupResult out;
  out.hit_count = loc.hit_count;
  out.tiers = std::move(loc.tiers);
  if (lease_ms > 0 && loc.hit_count > 0 && !loc.member_leases.empty()) {
    LeaseTable::Entry entry;
    for (uint32_t i = 0; i < loc.hit_count; ++i) entry.where[keys[i]] = v->SharedOf(loc.where[i]);
    for (const auto& [conn, id] : loc.member_leases) entry.member_leases[conn] = id;
    out.lease_id = leases_.Add(std::move(entry), absl::Now() + absl::Milliseconds(lease_ms));
  }
  return out;
}

absl::Status ClusterClient::Put(NamespaceHandle ns, absl::Span<PutItem> items) {
  for (const PutItem& item : items) {
    if (item.data == nullptr || item.size == 0) {
      return absl::InvalidArgumentError("Put: every item needs data and a size > 0");
    }
  }
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
  FanOut(groups.size(), [&](size_t g) {
    for (size_t i : groups.indices[g]) subs[g].push_back(items[i]);
    results[g] = CallMember(groups.conns[g], ns.id,
                            [&](Client& c) { return c.Put(ns, absl::MakeSpan(subs[g])); });
  });
  // An item is stored when any of its owners stored it.
  std::vector<uint8_t> stored(items.size(), 0);
  Refusal refusals;
  for (size_t g = 0; g < groups.size(); ++g) {
    refusals.Note(results[g]);
    for (size_t k = 0; k < subs[g].size(); ++k) {
      PutItem& item = items[groups.indices[g][k]];
      if (stored[groups.indices[g][k]]) continue;
      if (!results[g].ok()) {
        item.status = absl::UnavailableError(absl::StrCat(
            "cluster member ", groups.conns[g]->member().id, ": ", results[g].message()));
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
  Refusal refusals;
  RunRounds(cands,
            [&](MemberConn* conn, absl::Span<const size_t> idx, absl::Span<uint8_t> resolved) {
              std::vector<Key128> sub;
              for (size_t i : idx) sub.push_back(keys[i]);
              std::vector<ChunkTier> tiers;
              absl::Status s = CallMember(conn, ns.id, [&](Client& c) {
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

absl::StatusOr<uint32_t> ClusterClient::Delete(NamespaceHandle ns, absl::Span<const Key128> keys) {
  std::shared_ptr<const ClusterView> v = view();
  if (v->current.empty()) return 0u;
  const ClusterView* previous = v->Handover(absl::Now());
  // Every copy: the owners, the replicas, the previous owner.
  const size_t copies = options_.cluster.replicas;
  Groups groups;
  for (size_t i = 0; i < keys.size(); ++i) {
    for (MemberConn* c : CandidatesOf(*v, previous, keys[i], copies)) groups.Add(c, i);
  }
  std::vector<uint32_t> deleted(groups.size(), 0);
  Refusal refusals;
  FanOut(groups.size(), [&](size_t g) {
    std::vector<Key128> sub;
    for (size_t i : groups.indices[g]) sub.push_back(keys[i]);
    refusals.Note(CallMember(groups.conns[g], ns.id, [&](Client& c) {
      absl::StatusOr<uint32_t> r = c.Delete(ns, sub);
      if (r.ok()) deleted[g] = *r;
      return r.status();
    }));
  });
  if (absl::Status s = refusals.status(); !s.ok()) return s;
  uint32_t total = 0;
  for (uint32_t d : deleted) total += d;
  return total;
}

absl::StatusOr<uint32_t> ClusterClient::Pin(NamespaceHandle ns, absl::Span<const Key128> keys,
                                            bool pin) {
  std::shared_ptr<const ClusterView> v = view();
  if (keys.empty() || v->current.empty()) return 0u;
  // The leading keys present, and where: each member pins its share of them.
  absl::Status refusal;
  Located loc = Locate(*v, ns.id, keys, /*lease_ms=*/0, /*session_id=*/0, &refusal);
  if (!refusal.ok()) return refusal;
  Groups groups;
  for (uint32_t i = 0; i < loc.hit_count; ++i) groups.Add(loc.where[i], i);
  std::vector<uint32_t> changed(groups.size(), 0);
  std::vector<absl::Status> results(groups.size());
  FanOut(groups.size(), [&](size_t g) {
    std::vector<Key128> sub;
    for (size_t i : groups.indices[g]) sub.push_back(keys[i]);
    results[g] = CallMember(groups.conns[g], ns.id, [&](Client& c) {
      absl::StatusOr<uint32_t> r = c.Pin(ns, sub, pin);
      if (r.ok()) changed[g] = *r;
      return r.status();
    });
  });
  uint32_t total = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!results[g].ok() && !IsMemberFailure(results[g])) return results[g];
    total += changed[g];
  }
  return total;
}

}  // namespace kvstash::client_internal
