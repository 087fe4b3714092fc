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
#include "client/fan_out.h"

namespace kvstash::client_internal {
namespace {

using Candidates = absl::InlinedVector<MemberConn*, 4>;

// Keys (or items) of one call grouped by the member they go to, in first-seen order.
struct Groups {
  std::vector<MemberConn*> conns;
  std::vector<std::vector<size_t>> indices;

  void Add(MemberConn* conn, size_t index) {
    auto it = std::find(conns.begin(), conns.end(), conn);
    if (it == conns.end()) {
      conns.push_back(conn);
      indices.emplace_back();
      it = conns.end() - 1;
    }
    indices[it - conns.begin()].push_back(index);
  }
  size_t size() const { return conns.size(); }
};

void AddUnique(MemberConn* conn, Candidates* cands) {
  if (conn != nullptr && std::find(cands->begin(), cands->end(), conn) == cands->end()) {
    cands->push_back(conn);
  }
}

// The owners of `key`, then its previous owner while a hand-over lasts.
Candidates CandidatesOf(const ClusterView& view, const ClusterView* previous, const Key128& key,
                        size_t replicas) {
  Candidates out;
  for (MemberConn* c : view.Owners(key, replicas)) AddUnique(c, &out);
  if (previous != nullptr && !previous->current.empty()) {
    AddUnique(previous->Owners(key, 1)[0], &out);
  }
  return out;
}

// Each round sends every unresolved index to its next candidate whose breaker is not
// open, one call per member, members in parallel, until each is resolved or has no
// candidate left. call(conn, indices, resolved) makes one member's call and sets
// resolved[k] for each index that needs no other candidate.
template <typename Call>
void RunRounds(const std::vector<Candidates>& cands, Call call) {
  std::vector<size_t> cursor(cands.size(), 0);
  std::vector<uint8_t> done(cands.size(), 0);
  for (;;) {
    Groups groups;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (done[i]) continue;
      while (cursor[i] < cands[i].size() && cands[i][cursor[i]]->Skip()) ++cursor[i];
      if (cursor[i] >= cands[i].size()) {
        done[i] = 1;
        continue;
      }
      groups.Add(cands[i][cursor[i]], i);
    }
    if (groups.size() == 0) return;
    std::vector<std::vector<uint8_t>> resolved(groups.size());
    FanOut(groups.size(), [&](size_t g) {
      resolved[g].assign(groups.indices[g].size(), 0);
      call(groups.conns[g], absl::MakeConstSpan(groups.indices[g]), absl::MakeSpan(resolved[g]));
    });
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t k = 0; k < groups.indices[g].size(); ++k) {
        const size_t i = groups.indices[g][k];
        if (resolved[g][k]) {
          done[i] = 1;
        } else {
          ++cursor[i];
        }
      }
    }
  }
}

// Makes one member call with Begin/Done around it; the call's status.
template <typename Fn>
absl::Status CallMember(MemberConn* conn, const Key128& ns, Fn fn) {
  absl::StatusOr<Client*> client = conn->Begin(&ns);
  if (!client.ok()) return client.status();
  absl::Status s = fn(**client);
  conn->Done(s);
  return s;
}

// Remembers the first refusal (an error that is not a member failure) among concurrent
// member calls.
class Refusal {
 public:
  void Note(const absl::Status& s) {
    if (s.ok() || IsMemberFailure(s)) return;
    absl::MutexLock lock(&mu_);
    if (first_.ok()) first_ = s;
  }
  absl::Status status() {
    absl::MutexLock lock(&mu_);
    return first_;
  }

 private:
  absl::Mutex mu_;
  absl::Status first_ ABSL_GUARDED_BY(mu_);
};

bool IsHot(const PutHints& hints) { return hints.priority == Priority::kHigh || hints.pin; }

}  // namespace

ClusterClient::Located ClusterClient::Locate(const ClusterView& view, const Key128& ns,
                                             absl::Span<const Key128> keys, uint32_t lease_ms,
                                             uint64_t session_id, absl::Status* refusal) {
  const size_t n = keys.size();
  const ClusterView* previous = view.Handover(absl::Now());
  Located out;
  std::vector<MemberConn*> found(n, nullptr);
  std::vector<ChunkTier> tiers(n, ChunkTier::kNone);
  std::vector<MemberConn*> asked(n, nullptr);
  std::vector<uint8_t> failed(n, 0);
  Refusal refusals;
  absl::Mutex leases_mu;
  auto run = [&](const Groups& groups) {
    FanOut(groups.size(), [&](size_t g) {
      MemberConn* conn = groups.conns[g];
      std::vector<Key128> sub;
      for (size_t i : groups.indices[g]) sub.push_back(keys[i]);
      LookupResult r;
      absl::Status s = CallMember(conn, ns, [&](Client& c) {
        absl::StatusOr<LookupResult> lr = c.Lookup({ns}, sub, lease_ms, session_id);
        if (lr.ok()) r = *std::move(lr);
        return lr.status();
      });
      refusals.Note(s);
      for (size_t k = 0; k < sub.size(); ++k) {
        const size_t i = groups.indices[g][k];
        asked[i] = conn;
        failed[i] = !s.ok();
        if (s.ok() && k < r.hit_count) {
          found[i] = conn;
          tiers[i] = k < r.tiers.size() ? r.tiers[k] : ChunkTier::kNone;
        }
      }
      if (s.ok() && r.lease_id != 0) {
        absl::MutexLock lock(&leases_mu);
        out.member_leases.emplace_back(conn, r.lease_id);
      }
    });
  };
  auto first_missing = [&] {
    return static_cast<size_t>(std::find(found.begin(), found.end(), nullptr) - found.begin());
  };
  const size_t replicas = options_.cluster.replicas;
  Groups first;
  for (size_t i = 0; i < n; ++i) {
    std::vector<MemberConn*> owners = view.Owners(keys[i], replicas);
    auto live =
        std::find_if(owners.begin(), owners.end(), [](MemberConn* c) { return !c->Skip(); });
    first.Add(live != owners.end() ? *live : owners[0], i);
  }
  run(first);
  // One more round for the keys from the first miss on: the next replica where the owner
  // failed, the previous owner where the key moved during a hand-over.
  Groups second;
  for (size_t i = first_missing(); i < n; ++i) {
    if (found[i] != nullptr) continue;
    Candidates cands = CandidatesOf(view, previous, keys[i], failed[i] ? replicas : 1);
    auto next = std::find(cands.begin(), cands.end(), asked[i]);
    next = next == cands.end() ? cands.begin() : next + 1;
    while (next != cands.end() && (*next)->Skip()) ++next;
    if (next == cands.end()) continue;
    if (previous != nullptr && next == cands.end() - 1 && !failed[i]) {
      keys_moved_.fetch_add(1, std::memory_order_relaxed);
    }
    second.Add(*next, i);
  }
  if (second.size() > 0) run(second);
  out.hit_count = static_cast<uint32_t>(first_missing());
  out.where.assign(found.begin(), found.begin() + out.hit_count);
  out.tiers.assign(tiers.begin(), tiers.begin() + out.hit_count);
  *refusal = refusals.status();
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

absl::Status ClusterClient::Get(NamespaceHandle ns, absl::Span<GetItem> items, uint64_t lease_id) {
  std::shared_ptr<const ClusterView> v = view();
  std::shared_ptr<const LeaseTable::Entry> lease =
      lease_id != 0 ? leases_.Find(lease_id, absl::Now()) : nullptr;
  for (GetItem& item : items) {
    item.status = absl::NotFoundError("chunk not found in the cluster");
    item.size = 0;
  }
  if (v->current.empty() || items.empty()) return absl::OkStatus();
  return GetRounds(*v, ns, items, lease.get());
}

absl::Status ClusterClient::GetRounds(const ClusterView& view, NamespaceHandle ns,
                                      absl::Span<GetItem> items, const LeaseTable::Entry* lease) {
  const ClusterView* previous = view.Handover(absl::Now());
  const size_t replicas = options_.cluster.replicas;
  std::vector<Candidates> cands(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (lease != nullptr) {
      auto it = lease->where.find(items[i].key);
      if (it != lease->where.end()) AddUnique(it->second.get(), &cands[i]);
    }
    for (MemberConn* c : CandidatesOf(view, previous, items[i].key, replicas)) {
      AddUnique(c, &cands[i]);
    }
  }
  std::vector<MemberConn*> found_on(items.size(), nullptr);
  std::vector<uint8_t> owner_missed(items.size(), 0);  // the owner answered NOT_FOUND
  Refusal refusals;
  RunRounds(
      cands, [&](MemberConn* conn, absl::Span<const size_t> idx, absl::Span<uint8_t> resolved) {
        std::vector<GetItem> sub;
        for (size_t i : idx) {
          GetItem g;
          g.key = items[i].key;
          g.data = items[i].data;
          g.capacity = items[i].capacity;
          sub.push_back(g);
        }
        uint64_t member_lease = 0;
        if (lease != nullptr) {
          auto it = lease->member_leases.find(conn);
          if (it != lease->member_leases.end()) member_lease = it->second;
        }
        absl::Status s = CallMember(
            conn, ns.id, [&](Client& c) { return c.Get(ns, absl::MakeSpan(sub), member_lease); });
        refusals.Note(s);
        if (!s.ok()) return;  // every item a miss here; the next candidate may have it
        for (size_t k = 0; k < idx.size(); ++k) {
          const size_t i = idx[k];
          if (absl::IsNotFound(sub[k].status)) {
            if (conn == view.Owners(items[i].key, 1)[0]) owner_missed[i] = 1;
            continue;
          }
          GetItem& item = items[i];
          item.status = sub[k].status;
          item.size = sub[k].size;
          item.tokens = sub[k].tokens;
          item.format = sub[k].format;
          item.checksum = sub[k].checksum;
          resolved[k] = 1;
          if (item.status.ok()) found_on[i] = conn;
        }
      });
  CopyFound(view, ns, items, found_on, owner_missed);
  return refusals.status();
}

void ClusterClient::CopyFound(const ClusterView& view, NamespaceHandle ns,
                              absl::Span<GetItem> items, const std::vector<MemberConn*>& found_on,
                              const std::vector<uint8_t>& owner_missed) {
  const size_t replicas = options_.cluster.replicas;
  Groups copies;  // read-repair and hot copies, per target member
  for (size_t i = 0; i < items.size(); ++i) {
    if (found_on[i] == nullptr) continue;
    std::vector<MemberConn*> owners = view.Owners(items[i].key, replicas);
    // Read-repair: the owner said it has no copy, another member had one.
    if (owner_missed[i] && found_on[i] != owners[0]) copies.Add(owners[0], i);
    if (replicas > 1 && options_.cluster.hot_fetches > 0 && CountFetch(items[i].key)) {
      for (size_t r = 1; r < owners.size(); ++r) {
        if (owners[r] != found_on[i]) copies.Add(owners[r], i);
      }
    }
  }
  for (size_t g = 0; g < copies.size(); ++g) {
    std::vector<const GetItem*> chunks;
    for (size_t i : copies.indices[g]) chunks.push_back(&items[i]);
    CopyInBackground(ns, view.SharedOf(copies.conns[g]), chunks);
  }
}

void ClusterClient::CopyInBackground(NamespaceHandle ns, MemberConnPtr to,
                                     const std::vector<const GetItem*>& items) {
  if (to == nullptr || items.empty()) return;
  // The caller's buffers are theirs again once Get returns: copy the bytes now.
  struct Chunk {
    Key128 key;
    std::string bytes;
    uint32_t tokens;
    uint32_t format;
  };
  auto chunks = std::make_shared<std::vector<Chunk>>();
  for (const GetItem* item : items) {
    chunks->push_back(Chunk{item->key,
                            std::string(static_cast<const char*>(item->data), item->size),
                            item->tokens, item->format});
  }
  executor_.Post([ns, to = std::move(to), chunks] {
    std::vector<PutItem> puts;
    for (const Chunk& c : *chunks) {
      PutItem p;
      p.key = c.key;
      p.data = c.bytes.data();
      p.size = c.bytes.size();
      p.tokens = c.tokens;
      p.format = c.format;
      puts.push_back(p);
    }
    // Best effort: a copy that fails leaves the chunk where it was found.
    CallMember(to.get(), ns.id, [&](Client& c) {
      return c.Put(ns, absl::MakeSpan(puts));
    }).IgnoreError();
  });
}

bool ClusterClient::CountFetch(const Key128& key) {
  // Bounded memory: counts start over once this many chunks are being counted.
  constexpr size_t kMaxCounted = 1 << 16;
  absl::MutexLock lock(&fetch_mu_);
  if (fetch_counts_.size() >= kMaxCounted) fetch_counts_.clear();
  return ++fetch_counts_[key] == static_cast<uint32_t>(options_.cluster.hot_fetches);
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
