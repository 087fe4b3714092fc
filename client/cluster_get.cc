// ClusterClient::Get: each item from the member its lookup lease names, else its owner,
// then its next replica and, during a hand-over, its previous owner; chunks found off
// their owner are copied to it (read-repair), chunks that became hot to their replicas.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/time/clock.h"
#include "client/cluster_client.h"
#include "client/cluster_routing.h"
#include "client/item_checks.h"
#include "common/xxh3_dispatch.h"

namespace kvstash::client_internal {

absl::Status ClusterClient::Get(NamespaceHandle ns, absl::Span<GetItem> items, uint64_t lease_id) {
  if (absl::Status s = client_internal::CheckGetItems(items); !s.ok()) return s;
  std::shared_ptr<const ClusterView> v = view();
  std::shared_ptr<const LeaseTable::Entry> lease =
      lease_id != 0 ? leases_.Find(lease_id, absl::Now()) : nullptr;
  for (GetItem& item : items) {
    item.status = absl::NotFoundError("chunk not found in the cluster");
    item.size = 0;
    item.tokens = 0;
    item.format = 0;
    item.checksum = 0;
  }
  if (v->current.empty() || items.empty()) return absl::OkStatus();
  return GetRounds(*v, ns, items, lease.get(), CallDeadline());
}

absl::Status ClusterClient::GetRounds(const ClusterView& view, NamespaceHandle ns,
                                      absl::Span<GetItem> items, const LeaseTable::Entry* lease,
                                      absl::Time deadline) {
  const ClusterView* previous = view.Handover(absl::Now());
  const size_t replicas = options_.cluster.replicas;
  std::vector<Candidates> cands(items.size());
  // The member lease covering each item on the member its lookup found it on.
  std::vector<const LeaseTable::Entry::Held*> held(items.size(), nullptr);
  for (size_t i = 0; i < items.size(); ++i) {
    if (lease != nullptr) {
      auto it = lease->where.find(items[i].key);
      if (it != lease->where.end()) {
        held[i] = &it->second;
        AddUnique(it->second.conn.get(), &cands[i]);
      }
    }
    for (MemberConn* c : CandidatesOf(view, previous, items[i].key, replicas)) {
      AddUnique(c, &cands[i]);
    }
  }
  std::vector<MemberConn*> found_on(items.size(), nullptr);
  std::vector<uint8_t> owner_missed(items.size(), 0);  // the owner answered NOT_FOUND
  Refusals refusals;
  RunRounds(pool_, cands, deadline,
            [&](MemberConn* conn, absl::Span<const size_t> idx, absl::Span<uint8_t> resolved) {
              // One member Get per lease id: a member asked in two lookup rounds holds two.
              absl::InlinedVector<uint64_t, 2> ids;
              std::vector<uint64_t> id_of(idx.size(), 0);
              for (size_t k = 0; k < idx.size(); ++k) {
                const auto* h = held[idx[k]];
                if (h != nullptr && h->conn.get() == conn) id_of[k] = h->lease_id;
                if (std::find(ids.begin(), ids.end(), id_of[k]) == ids.end()) {
                  ids.push_back(id_of[k]);
                }
              }
              for (uint64_t id : ids) {
                std::vector<size_t> part;
                for (size_t k = 0; k < idx.size(); ++k) {
                  if (id_of[k] == id) part.push_back(k);
                }
                GetFrom(conn, ns, id, deadline, view, items, idx, part, resolved, &found_on,
                        &owner_missed, &refusals);
              }
            });
  CopyFound(view, ns, items, found_on, owner_missed);
  return refusals.status();
}

void ClusterClient::GetFrom(MemberConn* conn, NamespaceHandle ns, uint64_t member_lease,
                            absl::Time deadline, const ClusterView& view, absl::Span<GetItem> items,
                            absl::Span<const size_t> idx, const std::vector<size_t>& part,
                            absl::Span<uint8_t> resolved, std::vector<MemberConn*>* found_on,
                            std::vector<uint8_t>* owner_missed, Refusals* refusals) {
  std::vector<GetItem> sub;
  for (size_t k : part) {
    GetItem g;
    g.key = items[idx[k]].key;
    g.data = items[idx[k]].data;
    g.capacity = items[idx[k]].capacity;
    sub.push_back(g);
  }
  absl::Status s = CallMember(conn, ns.id, deadline, [&](Client& c) {
    return c.Get(ns, absl::MakeSpan(sub), member_lease);
  });
  refusals->Note(s);
  if (!s.ok()) return;  // every item a miss here; the next candidate may have it
  for (size_t p = 0; p < part.size(); ++p) {
    const size_t k = part[p];
    const size_t i = idx[k];
    const absl::Status& st = sub[p].status;
    if (absl::IsNotFound(st)) {
      if (conn == view.Owners(items[i].key, 1)[0]) (*owner_missed)[i] = 1;
      continue;
    }
    GetItem& item = items[i];
    item.status = st;
    item.size = sub[p].size;
    item.tokens = sub[p].tokens;
    item.format = sub[p].format;
    item.checksum = sub[p].checksum;
    // Bad bytes or a member that could not read its copy: another copy may be good. The
    // item keeps this status unless a later candidate has the chunk.
    if (absl::IsDataLoss(st) || absl::IsUnavailable(st)) continue;
    resolved[k] = 1;
    if (st.ok()) (*found_on)[i] = conn;
  }
}

void ClusterClient::CopyFound(const ClusterView& view, NamespaceHandle ns,
                              absl::Span<GetItem> items, const std::vector<MemberConn*>& found_on,
                              const std::vector<uint8_t>& owner_missed) {
  const size_t replicas = options_.cluster.replicas;
  Groups repairs;  // read-repair copies, per target member
  Groups hot;      // hot copies, per target member
  for (size_t i = 0; i < items.size(); ++i) {
    if (found_on[i] == nullptr) continue;
    std::vector<MemberConn*> owners = view.Owners(items[i].key, replicas);
    // Read-repair: the owner said it has no copy, another member had one.
    if (owner_missed[i] && found_on[i] != owners[0]) repairs.Add(owners[0], i);
    if (replicas > 1 && options_.cluster.hot_fetches > 0 && CountFetch(items[i].key)) {
      for (size_t r = 1; r < owners.size(); ++r) {
        if (owners[r] != found_on[i]) hot.Add(owners[r], i);
      }
    }
  }
  // Hot copies are kept like chunks put with priority kHigh (whether the original was
  // pinned is not known here, so no copy is pinned).
  PutHints hot_hints;
  hot_hints.priority = Priority::kHigh;
  for (auto [groups, hints] : {std::pair{&repairs, PutHints{}}, std::pair{&hot, hot_hints}}) {
    for (size_t g = 0; g < groups->size(); ++g) {
      std::vector<const GetItem*> chunks;
      for (size_t i : groups->indices[g]) chunks.push_back(&items[i]);
      CopyInBackground(ns, view.SharedOf(groups->conns[g]), chunks, hints);
    }
  }
}

void ClusterClient::CopyInBackground(NamespaceHandle ns, MemberConnPtr to,
                                     const std::vector<const GetItem*>& items,
                                     const PutHints& hints) {
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
    // Never spread bytes that differ from what the daemon recorded at Put time (Get checks
    // them only with verify_checksums).
    if (XXH3_64bits(item->data, item->size) != item->checksum) continue;
    chunks->push_back(Chunk{item->key,
                            std::string(static_cast<const char*>(item->data), item->size),
                            item->tokens, item->format});
  }
  if (chunks->empty()) return;
  executor_.Post([ns, to = std::move(to), chunks, hints] {
    std::vector<PutItem> puts;
    for (const Chunk& c : *chunks) {
      PutItem p;
      p.key = c.key;
      p.data = c.bytes.data();
      p.size = c.bytes.size();
      p.tokens = c.tokens;
      p.format = c.format;
      p.hints = hints;
      puts.push_back(p);
    }
    // Best effort: a copy that fails leaves the chunk where it was found.
    CallMember(to.get(), ns.id, absl::InfiniteFuture(), [&](Client& c) {
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

}  // namespace kvstash::client_internal
