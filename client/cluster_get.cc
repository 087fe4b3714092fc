// ClusterClient::Get: each item from the member its lookup lease names, else its owner,
// then its next replica and, during a hand-over, its previous owner; chunks found off
// their owner are copied to it (read-repair), chunks that became hot to their replicas.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "client/cluster_client.h"
#include "client/cluster_routing.h"

namespace kvstash::client_internal {

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

}  // namespace kvstash::client_internal
