// ChunkIndex's hint bookkeeping: eviction classes, TTL expiry, pins and sessions (see the
// class comment in index.h).
#include "absl/container/flat_hash_set.h"
#include "storage/index.h"

namespace kvstash::storage {

EvictionClass ChunkIndex::ClassOf(const IndexEntry& e, int64_t now_ns) {
  if (e.pinned) return EvictionClass::kPinned;
  if (e.session_id != 0) return EvictionClass::kSession;
  if (e.ttl_deadline_ns > now_ns) return EvictionClass::kTtl;
  switch (e.priority) {
    case Priority::kLow:
      return EvictionClass::kLow;
    case Priority::kHigh:
      return EvictionClass::kHigh;
    case Priority::kNormal:
      break;
  }
  return EvictionClass::kNormal;
}

bool ChunkIndex::KeepBelowDram(const IndexEntry& e, int64_t now_ns) {
  return ClassOf(e, now_ns) >= EvictionClass::kTtl;
}

void ChunkIndex::Link(Shard& s, IndexEntry* e, int64_t now_ns) {
  e->eviction_class = ClassOf(*e, now_ns);
  if (e->eviction_class == EvictionClass::kPinned) return;
  const int cls = static_cast<int>(e->eviction_class);
  s.policies[cls]->OnInsert(e);
  ++s.class_entries[cls];
  class_size_[cls].fetch_add(1, std::memory_order_relaxed);
  if (e->eviction_class == EvictionClass::kTtl) s.ttl_queue.insert({e->ttl_deadline_ns, e});
}

void ChunkIndex::Unlink(Shard& s, IndexEntry* e) {
  if (e->eviction_class == EvictionClass::kPinned) return;
  const int cls = static_cast<int>(e->eviction_class);
  s.policies[cls]->OnErase(e);
  --s.class_entries[cls];
  class_size_[cls].fetch_sub(1, std::memory_order_relaxed);
  if (e->eviction_class == EvictionClass::kTtl) s.ttl_queue.erase({e->ttl_deadline_ns, e});
}

void ChunkIndex::Reclassify(Shard& s, IndexEntry* e, int64_t now_ns) {
  if (ClassOf(*e, now_ns) == e->eviction_class) return;
  Unlink(s, e);
  Link(s, e, now_ns);
}

void ChunkIndex::ExpireTtls(Shard& s, int64_t now_ns) {
  while (!s.ttl_queue.empty() && s.ttl_queue.begin()->first <= now_ns) {
    Reclassify(s, s.ttl_queue.begin()->second, now_ns);  // leaves the queue
  }
}

PinChange ChunkIndex::SetPinned(const ChunkId& id, bool pin) {
  const int64_t now_ns = NowNs();
  Shard& s = ShardFor(id);
  absl::MutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  if (it == s.entries.end()) return {};
  IndexEntry* e = it->second.get();
  PinChange change{true, e->pinned != pin, pin, e->size_bytes};
  if (!change.changed) return change;
  Unlink(s, e);
  e->pinned = pin;
  if (pin) e->session_id = 0;  // a pin takes over from a session
  Link(s, e, now_ns);
  CounterSnapshot& c = s.counters[id.ns];
  if (pin) {
    c.pinned_bytes += e->size_bytes;
  } else {
    c.pinned_bytes -= e->size_bytes;
  }
  return change;
}

PinChange ChunkIndex::Describe(const ChunkId& id) const {
  Shard& s = ShardFor(id);
  absl::ReaderMutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  if (it == s.entries.end()) return {};
  return {true, false, it->second->pinned, it->second->size_bytes};
}

void ChunkIndex::EndSessions(absl::Span<const SessionKey> sessions) {
  if (sessions.empty()) return;
  const absl::flat_hash_set<SessionKey> ended(sessions.begin(), sessions.end());
  const int64_t now_ns = NowNs();
  const int cls = static_cast<int>(EvictionClass::kSession);
  for (int i = 0; i < num_shards_; ++i) {
    Shard& s = shards_[i];
    absl::MutexLock lock(&s.mu);
    if (s.class_entries[cls] == 0) continue;
    std::vector<IndexEntry*> members;
    s.policies[cls]->VisitColdest([&](const PolicyHook* h) {
      const auto* e = static_cast<const IndexEntry*>(h);
      if (ended.contains(SessionKey{e->id.ns, e->session_id})) {
        members.push_back(const_cast<IndexEntry*>(e));  // entries belong to this index
      }
      return true;
    });
    for (IndexEntry* e : members) {
      e->session_id = 0;
      Reclassify(s, e, now_ns);
    }
  }
}

bool ChunkIndex::JoinSessionLocked(IndexEntry* e, uint64_t session_id) const {
  if (session_id == 0) return false;
  // Under the shard lock: a session that ends after this check is followed by an
  // EndSessions walk that takes this lock too, so it finds the entry; one that ended
  // before is refused here.
  if (session_active_ && !session_active_(SessionKey{e->id.ns, session_id})) return false;
  e->session_id = session_id;
  return true;
}

}  // namespace kvstash::storage
