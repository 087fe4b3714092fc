#include "storage/index.h"

#include <algorithm>
#include <cstring>

#include "absl/hash/hash.h"
#include "absl/status/status.h"

namespace kvstash::storage {
namespace {

void Accumulate(CounterSnapshot* to, const CounterSnapshot& from) {
#define KVSTASH_ADD(name, ...) to->name += from.name;
  KVSTASH_STORE_COUNTERS(KVSTASH_ADD)
#undef KVSTASH_ADD
}

uint64_t Load64(const Key128& k, size_t offset) {
  uint64_t v;
  std::memcpy(&v, k.data() + offset, sizeof(v));
  return v;
}

size_t TierSlot(Tier t) { return static_cast<size_t>(t); }

// Whether the entry's hints ask for demotion to NVMe whatever the admission rule.
// TODO(hints): sessions, pins and unexpired TTLs.
bool KeepBelowDram(const IndexEntry& e) {
  (void)e;
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChunkIndex>> ChunkIndex::Create(int num_shards,
                                                               absl::string_view policy) {
  if (num_shards < 1 || (num_shards & (num_shards - 1)) != 0) {
    return absl::InvalidArgumentError("index_shards must be a power of two >= 1");
  }
  std::unique_ptr<ChunkIndex> index(new ChunkIndex(num_shards));
  for (int i = 0; i < num_shards; ++i) {
    auto p = CreateEvictionPolicy(policy);
    if (!p.ok()) return p.status();
    Shard& s = index->shards_[i];
    absl::MutexLock lock(&s.mu);
    s.policy = *std::move(p);
  }
  return index;
}

ChunkIndex::ChunkIndex(int num_shards) : num_shards_(num_shards), shards_(new Shard[num_shards]) {}

ChunkIndex::Shard& ChunkIndex::ShardFor(const ChunkId& id) const {
  // Keys are already hashes; the high bits of a multiplicative mix pick the shard, leaving
  // the low bits that flat_hash_map uses inside the shard uncorrelated with the choice.
  const uint64_t h =
      (Load64(id.key, 0) ^ Load64(id.key, 8) ^ Load64(id.ns, 0)) * 0x9E3779B97F4A7C15ull;
  return shards_[(h >> 32) & (num_shards_ - 1)];
}

Tier ChunkIndex::Locate(const ChunkId& id) const {
  Shard& s = ShardFor(id);
  absl::ReaderMutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  return it == s.entries.end() ? Tier::kNone : it->second->tier;
}

bool ChunkIndex::Insert(const ChunkId& id, ChunkRef chunk, Tier tier, bool count_put,
                        const PutHints& hints) {
  auto entry = std::make_unique<IndexEntry>();  // allocated outside the lock
  entry->id = id;
  entry->size_bytes = chunk->meta().size_bytes;
  entry->key_hash = absl::HashOf(id);
  entry->tier = tier;
  entry->generation = next_generation_.fetch_add(1, std::memory_order_relaxed);
  // The parent first, under its own shard's lock only; undone below if the insert fails.
  ParentLink parent;
  if (hints.has_parent) parent = AddChild(ChunkId{id.ns, hints.parent});
  entry->parent = parent.id;
  entry->parent_generation = parent.generation;
  {
    Shard& s = ShardFor(id);
    absl::MutexLock lock(&s.mu);
    auto [it, inserted] = s.entries.try_emplace(id, nullptr);
    if (inserted) {
      entry->chunk = std::move(chunk);
      IndexEntry* e = entry.get();
      it->second = std::move(entry);
      s.policy->OnInsert(e);
      CounterSnapshot& c = s.counters[id.ns];
      if (count_put) ++c.puts;
      ++c.chunks;
      c.bytes += e->size_bytes;
      ++s.tier_chunks[TierSlot(tier)];
      s.tier_bytes[TierSlot(tier)] += e->size_bytes;
      size_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  DropChild(parent);
  return false;
}

ChunkIndex::ParentLink ChunkIndex::AddChild(const ChunkId& parent) {
  Shard& s = ShardFor(parent);
  absl::MutexLock lock(&s.mu);
  auto it = s.entries.find(parent);
  if (it == s.entries.end()) return {};
  IndexEntry& e = *it->second;
  if (e.children == UINT32_MAX) return {};  // saturated: this child is not counted
  if (e.children++ == 0) s.policy->OnChildrenChanged(&e);
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
  if (e.children > 0 && --e.children == 0) s.policy->OnChildrenChanged(&e);
}

ChunkRef ChunkIndex::Get(const ChunkId& id, bool count_miss) {
  Shard& s = ShardFor(id);
  absl::MutexLock lock(&s.mu);
  CounterSnapshot& c = s.counters[id.ns];
  auto it = s.entries.find(id);
  if (it == s.entries.end()) {
    if (count_miss) ++c.misses;
    return nullptr;
  }
  ++c.hits;
  Touch(s, it->second.get());
  return it->second->chunk;
}

void ChunkIndex::Touch(Shard& s, IndexEntry* e) {
  if (e->hits != UINT32_MAX) ++e->hits;
  s.policy->OnAccess(e);
}

void ChunkIndex::RecordGet(const ChunkId& id, bool hit) {
  Shard& s = ShardFor(id);
  absl::MutexLock lock(&s.mu);
  CounterSnapshot& c = s.counters[id.ns];
  ++(hit ? c.hits : c.misses);
}

ChunkRef ChunkIndex::RemoveLocked(Shard& s, IndexEntry* e, ParentLink* parent) {
  s.policy->OnErase(e);
  *parent = {e->parent, e->parent_generation};
  CounterSnapshot& c = s.counters[e->id.ns];
  --c.chunks;
  c.bytes -= e->size_bytes;
  --s.tier_chunks[TierSlot(e->tier)];
  s.tier_bytes[TierSlot(e->tier)] -= e->size_bytes;
  ChunkRef chunk = std::move(e->chunk);
  size_.fetch_sub(1, std::memory_order_relaxed);
  const ChunkId id = e->id;  // a copy: erase destroys *e
  s.entries.erase(id);
  return chunk;
}

ChunkRef ChunkIndex::Erase(const ChunkId& id) {
  Shard& s = ShardFor(id);
  ParentLink parent;
  ChunkRef chunk;
  {
    absl::MutexLock lock(&s.mu);
    auto it = s.entries.find(id);
    if (it == s.entries.end()) return nullptr;
    ++s.counters[id.ns].deletes;
    chunk = RemoveLocked(s, it->second.get(), &parent);
  }
  DropChild(parent);
  return chunk;
}

bool ChunkIndex::Evictable(const PolicyHook* h) {
  // References are only copied under the shard lock, so use_count() == 1 means no reader
  // can appear: evicting frees the bytes as soon as the caller drops the returned ref.
  const auto* e = static_cast<const IndexEntry*>(h);
  return e->lease_refs == 0 && e->chunk.use_count() == 1;
}

ChunkRef ChunkIndex::EvictOne(EvictedEntry* victim) {
  // The shards are scanned one lock at a time, so by the time the chosen shard is locked
  // again its candidate may be referenced (a reader, a cleaning) or gone. Its next entry
  // may then be far warmer than other shards' candidates: that attempt evicts nothing and
  // the scan starts over. The last attempt takes whatever the chosen shard offers, so heavy
  // churn costs accuracy, never a failed eviction.
  for (int attempt = 0; attempt < kEvictAttempts; ++attempt) {
    const VictimShard best = BestVictimShard();
    if (best.shard == nullptr) return nullptr;
    const uint64_t max_rank = attempt + 1 < kEvictAttempts ? best.rank : UINT64_MAX;
    if (ChunkRef chunk = EvictFrom(*best.shard, max_rank, victim)) return chunk;
  }
  return nullptr;
}

ChunkIndex::VictimShard ChunkIndex::BestVictimShard() {
  // Comparing the shards' candidates makes the tier follow its policy as a whole: with few
  // large chunks most shards hold one or none, and taking shards in turn would evict at
  // random. A large index has many entries per shard, so a sample of shards suffices.
  const bool sample = size() >= uint64_t{kSampleAboveEntriesPerShard} * num_shards_;
  const int scan = sample ? std::min(num_shards_, kSampledShards) : num_shards_;
  const uint32_t start = evict_cursor_.fetch_add(scan, std::memory_order_relaxed);
  VictimShard best;
  for (int i = 0; i < scan; ++i) {
    Shard& s = shards_[(start + i) & (num_shards_ - 1)];
    absl::MutexLock lock(&s.mu);
    const PolicyHook* victim = s.policy->PickVictim(Evictable);
    if (victim == nullptr) continue;
    const uint64_t rank = s.policy->VictimRank(victim);
    if (best.shard == nullptr || rank < best.rank) best = {&s, rank};
  }
  return best;
}

ChunkRef ChunkIndex::EvictFrom(Shard& s, uint64_t max_rank, EvictedEntry* victim) {
  ParentLink parent;
  ChunkRef chunk;
  {
    absl::MutexLock lock(&s.mu);
    PolicyHook* hook = s.policy->PickVictim(Evictable);
    if (hook == nullptr || s.policy->VictimRank(hook) > max_rank) return nullptr;
    auto* e = static_cast<IndexEntry*>(hook);
    if (victim != nullptr) *victim = {e->id, e->hits, KeepBelowDram(*e)};
    ++s.counters[e->id.ns].evictions;
    chunk = RemoveLocked(s, e, &parent);
  }
  DropChild(parent);
  return chunk;
}

std::vector<ColdEntry> ChunkIndex::Coldest(uint64_t max_bytes, int max_entries) const {
  std::vector<ColdEntry> out;
  for (int i = 0; i < num_shards_; ++i) {
    Shard& s = shards_[i];
    absl::ReaderMutexLock lock(&s.mu);
    uint64_t bytes = 0;
    int entries = 0;
    s.policy->VisitColdest([&](const PolicyHook* h) {
      const auto* e = static_cast<const IndexEntry*>(h);
      out.push_back({e->id, s.policy->VictimRank(h), e->size_bytes, e->hits, KeepBelowDram(*e)});
      bytes += e->size_bytes;
      return ++entries < max_entries && bytes < max_bytes;
    });
  }
  return out;
}

ChunkRef ChunkIndex::Peek(const ChunkId& id) const {
  Shard& s = ShardFor(id);
  absl::ReaderMutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  return it == s.entries.end() ? nullptr : it->second->chunk;
}

uint32_t ChunkIndex::Children(const ChunkId& id) const {
  Shard& s = ShardFor(id);
  absl::ReaderMutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  return it == s.entries.end() ? 0 : it->second->children;
}

ProbeResult ChunkIndex::Probe(const ChunkId& id, bool take_lease) {
  Shard& s = ShardFor(id);
  absl::MutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  if (it == s.entries.end()) return {};
  IndexEntry& e = *it->second;
  Touch(s, &e);
  if (!take_lease) return {e.tier, 0};
  ++e.lease_refs;
  return {e.tier, e.generation};
}

void ChunkIndex::DropLeaseRef(const ChunkId& id, uint64_t generation) {
  Shard& s = ShardFor(id);
  absl::MutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  if (it == s.entries.end() || it->second->generation != generation) return;
  if (it->second->lease_refs > 0) --it->second->lease_refs;
}

void ChunkIndex::RecordLookup(const Key128& ns, const Key128& first_key, uint32_t hit_chunks) {
  Shard& s = ShardFor(ChunkId{ns, first_key});
  absl::MutexLock lock(&s.mu);
  CounterSnapshot& c = s.counters[ns];
  ++c.lookups;
  c.lookup_hit_chunks += hit_chunks;
}

CounterSnapshot ChunkIndex::NamespaceCounters(const Key128& ns) const {
  CounterSnapshot total;
  for (int i = 0; i < num_shards_; ++i) {
    absl::ReaderMutexLock lock(&shards_[i].mu);
    auto it = shards_[i].counters.find(ns);
    if (it != shards_[i].counters.end()) Accumulate(&total, it->second);
  }
  return total;
}

std::vector<std::pair<Key128, CounterSnapshot>> ChunkIndex::AllNamespaceCounters() const {
  absl::flat_hash_map<Key128, CounterSnapshot> merged;
  for (int i = 0; i < num_shards_; ++i) {
    absl::ReaderMutexLock lock(&shards_[i].mu);
    for (const auto& [ns, c] : shards_[i].counters) Accumulate(&merged[ns], c);
  }
  std::vector<std::pair<Key128, CounterSnapshot>> out(merged.begin(), merged.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

CounterSnapshot ChunkIndex::Totals() const {
  CounterSnapshot total;
  for (const auto& [ns, c] : AllNamespaceCounters()) Accumulate(&total, c);
  return total;
}

std::pair<uint64_t, uint64_t> ChunkIndex::TierUsage(Tier tier) const {
  std::pair<uint64_t, uint64_t> usage{0, 0};
  for (int i = 0; i < num_shards_; ++i) {
    absl::ReaderMutexLock lock(&shards_[i].mu);
    usage.first += shards_[i].tier_chunks[TierSlot(tier)];
    usage.second += shards_[i].tier_bytes[TierSlot(tier)];
  }
  return usage;
}

}  // namespace kvstash::storage
