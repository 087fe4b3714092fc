// ChunkIndex's child counts (PolicyHook::children): see the class comment in index.h.
#include "storage/index.h"

namespace kvstash::storage {

ChunkIndex::ParentLink ChunkIndex::AddChild(const ChunkId& parent) {
  Shard& s = ShardFor(parent);
  absl::MutexLock lock(&s.mu);
  auto it = s.entries.find(parent);
  if (it == s.entries.end()) return {};
  IndexEntry& e = *it->second;
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
