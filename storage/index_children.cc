// ChunkIndex's child counts (PolicyHook::children): see the class comment in index.h.
#include "storage/index.h"

namespace kvstash::storage {

ChunkIndex::ParentLink ChunkIndex::AddChild(const ChunkId& parent, const ChildProtection& child,
                                            int64_t now_ns) {
  Shard& s = ShardFor(parent);
  absl::MutexLock lock(&s.mu);
  auto it = s.entries.find(parent);
  if (it == s.entries.end()) return {};
  IndexEntry& e = *it->second;
  const bool raise_ttl = child.ttl_deadline_ns > e.ttl_deadline_ns;
  const bool join = child.session_id != 0 && e.session_id == 0 && !e.pinned;
  if (raise_ttl || join) {
    Unlink(s, &e);  // its class or TTL queue position may change
    if (raise_ttl) e.ttl_deadline_ns = child.ttl_deadline_ns;
    if (join) JoinSessionLocked(&e, child.session_id);
    Link(s, &e, now_ns);
  }
  if (e.children == UINT32_MAX) return {};  // saturated: this child is not counted
  if (e.children++ == 0) {
    if (EvictionPolicy* p = PolicyOf(s, &e)) p->OnChildrenChanged(&e);
  }
  return {parent, e.generation};
}

void ChunkIndex::DropChild(const ParentLink& parent) {
  if (parent.generation == 0) return;
  Shard& s = ShardFor(parent.id);
  absl::MutexLock lock(&s.mu);
  auto it = s.entries.find(parent.id);
  // Gone, or a newer entry of the key that never counted this child.
  if (it == s.entries.end() || it->second->generation != parent.generation) return;
  IndexEntry& e = *it->second;
  if (e.children > 0 && --e.children == 0) {
    if (EvictionPolicy* p = PolicyOf(s, &e)) p->OnChildrenChanged(&e);
  }
}

uint32_t ChunkIndex::Children(const ChunkId& id) const {
  Shard& s = ShardFor(id);
  absl::ReaderMutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  return it == s.entries.end() ? 0 : it->second->children;
}

}  // namespace kvstash::storage
