#include "storage/index.h"

#include <algorithm>
#include <cstring>

#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "storage/policy/policies.h"

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

// ChunkIndex::BytesPerEntry less the policy's share.
constexpr uint64_t IndexBytesPerEntry() {
  using MapSlot = std::pair<const ChunkId, std::unique_ptr<IndexEntry>>;
  using TtlNode = std::pair<int64_t, IndexEntry*>;
  // Swiss tables grow at 7/8 full to twice the capacity: 7/16 full right after; one
  // control byte per slot. B-tree nodes are at least half full.
  return sizeof(IndexEntry) + kMallocOverheadBytes + (sizeof(MapSlot) + 1) * 16 / 7 +
         2 * sizeof(TtlNode);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChunkIndex>> ChunkIndex::Create(int num_shards,
                                                               absl::string_view policy) {
  if (num_shards < 1 || (num_shards & (num_shards - 1)) != 0) {
    return absl::InvalidArgumentError("index_shards must be a power of two >= 1");
  }
  std::unique_ptr<ChunkIndex> index(new ChunkIndex(num_shards));
  auto probe = CreateEvictionPolicy(policy);
  if (!probe.ok()) return probe.status();
  index->bytes_per_entry_ = IndexBytesPerEntry() + (*probe)->BytesPerEntry();
  for (int i = 0; i < num_shards; ++i) {
    Shard& s = index->shards_[i];
    absl::MutexLock lock(&s.mu);
    for (EvictionPolicyPtr& slot : s.policies) {
      auto p = CreateEvictionPolicy(policy);
      if (!p.ok()) return p.status();
      slot = *std::move(p);
    }
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
  entry->priority = hints.priority;
  entry->pinned = hints.pin;
  const int64_t now_ns = NowNs();
  if (hints.ttl_ms > 0) entry->ttl_deadline_ns = now_ns + int64_t{hints.ttl_ms} * 1000000;
  // The parent first, under its own shard's lock only; undone below if the insert fails.
  ParentLink parent;
  if (hints.has_parent) {
    const uint64_t session_id = hints.pin ? 0 : hints.session_id;
    parent = AddChild(ChunkId{id.ns, hints.parent}, {entry->ttl_deadline_ns, session_id}, now_ns);
  }
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
      if (!hints.pin) JoinSessionLocked(e, hints.session_id);  // a pin takes over
      Link(s, e, now_ns);
      CounterSnapshot& c = s.counters[id.ns];
      if (count_put) ++c.puts;
      ++c.chunks;
      c.bytes += e->size_bytes;
      if (e->pinned) c.pinned_bytes += e->size_bytes;
      ++s.tier_chunks[TierSlot(tier)];
      s.tier_bytes[TierSlot(tier)] += e->size_bytes;
      size_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  DropChild(parent);
  return false;
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
  if (EvictionPolicy* p = PolicyOf(s, e)) p->OnAccess(e);
}

EvictionPolicy* ChunkIndex::PolicyOf(Shard& s, const IndexEntry* e) {
  if (e->eviction_class == EvictionClass::kPinned) return nullptr;
  return s.policies[static_cast<int>(e->eviction_class)].get();
}

void ChunkIndex::RecordGet(const ChunkId& id, bool hit) {
  Shard& s = ShardFor(id);
  absl::MutexLock lock(&s.mu);
  CounterSnapshot& c = s.counters[id.ns];
  ++(hit ? c.hits : c.misses);
}

ChunkRef ChunkIndex::RemoveLocked(Shard& s, IndexEntry* e, ParentLink* parent) {
  Unlink(s, e);
  *parent = {e->parent, e->parent_generation};
  CounterSnapshot& c = s.counters[e->id.ns];
  --c.chunks;
  c.bytes -= e->size_bytes;
  if (e->pinned) c.pinned_bytes -= e->size_bytes;
  --s.tier_chunks[TierSlot(e->tier)];
  s.tier_bytes[TierSlot(e->tier)] -= e->size_bytes;
  ChunkRef chunk = std::move(e->chunk);
  size_.fetch_sub(1, std::memory_order_relaxed);
  const ChunkId id = e->id;  // a copy: erase destroys *e
  s.entries.erase(id);
  return chunk;
}

ChunkRef ChunkIndex::Erase(const ChunkId& id, bool* was_pinned) {
  Shard& s = ShardFor(id);
  ParentLink parent;
  ChunkRef chunk;
  {
    absl::MutexLock lock(&s.mu);
    auto it = s.entries.find(id);
    if (it == s.entries.end()) return nullptr;
    ++s.counters[id.ns].deletes;
    if (was_pinned != nullptr) *was_pinned = it->second->pinned;
    chunk = RemoveLocked(s, it->second.get(), &parent);
  }
  DropChild(parent);
  return chunk;
}

ErasedChunks ChunkIndex::EraseNamespace(const Key128& ns) {
  ErasedChunks erased;
  for (int i = 0; i < num_shards_; ++i) {
    Shard& s = shards_[i];
    std::vector<ChunkRef> refs;  // released after the lock, like every removal
    std::vector<ParentLink> parents;
    {
      absl::MutexLock lock(&s.mu);
      std::vector<IndexEntry*> doomed;
      for (const auto& [id, e] : s.entries) {
        if (id.ns == ns) doomed.push_back(e.get());
      }
      parents.resize(doomed.size());
      for (size_t j = 0; j < doomed.size(); ++j) {
        IndexEntry* e = doomed[j];
        erased.ids.push_back(e->id);
        erased.bytes += e->size_bytes;
        if (e->pinned) erased.pinned_bytes += e->size_bytes;
        ++s.counters[ns].deletes;
        refs.push_back(RemoveLocked(s, e, &parents[j]));
      }
    }
    for (const ParentLink& parent : parents) DropChild(parent);
  }
  return erased;
}

bool ChunkIndex::Evictable(const PolicyHook* h, const NamespaceMatch* match) {
  // References are only copied under the shard lock, so use_count() == 1 means no reader
  // can appear: evicting frees the bytes as soon as the caller drops the returned ref.
  const auto* e = static_cast<const IndexEntry*>(h);
  return e->lease_refs == 0 && e->chunk.use_count() == 1 &&
         (match == nullptr || (*match)(e->id.ns));
}

ChunkRef ChunkIndex::EvictOne(EvictedEntry* victim) { return EvictImpl(nullptr, victim); }

ChunkRef ChunkIndex::EvictOneMatching(NamespaceMatch match, EvictedEntry* victim) {
  return EvictImpl(&match, victim);
}

ChunkRef ChunkIndex::EvictImpl(const NamespaceMatch* match, EvictedEntry* victim) {
  if (class_size_[static_cast<int>(EvictionClass::kTtl)].load(std::memory_order_relaxed) > 0) {
    // Lapsed TTLs first, so their chunks compete as ordinary ones (O(1) per shard when none).
    const int64_t now_ns = NowNs();
    for (int i = 0; i < num_shards_; ++i) {
      absl::MutexLock lock(&shards_[i].mu);
      ExpireTtls(shards_[i], now_ns);
    }
  }
  // The shards are scanned one lock at a time, so by the time the chosen shard is locked
  // again its candidate may be referenced (a reader, a cleaning) or gone. Its next entry
  // may then be far warmer than other shards' candidates: that attempt evicts nothing and
  // the scan starts over. The last attempt takes whatever the chosen shard offers, so heavy
  // churn costs accuracy, never a failed eviction.
  for (int cls = 0; cls < kEvictableClasses; ++cls) {
    if (class_size_[cls].load(std::memory_order_relaxed) == 0) continue;
    for (int attempt = 0; attempt < kEvictAttempts; ++attempt) {
      VictimShard best = BestVictimShard(cls, match, /*all=*/false);
      // A sample may miss a class that is rare: look at every shard before moving on.
      if (best.shard == nullptr) best = BestVictimShard(cls, match, /*all=*/true);
      if (best.shard == nullptr) break;  // nothing evictable in this class
      const uint64_t max_rank = attempt + 1 < kEvictAttempts ? best.rank : UINT64_MAX;
      if (ChunkRef chunk = EvictFrom(*best.shard, cls, match, max_rank, victim)) return chunk;
    }
  }
  return nullptr;
}

ChunkIndex::VictimShard ChunkIndex::BestVictimShard(int cls, const NamespaceMatch* match,
                                                    bool all) {
  // Comparing the shards' candidates makes the tier follow its policy as a whole: with few
  // large chunks most shards hold one or none, and taking shards in turn would evict at
  // random. A large index has many entries per shard, so a sample of shards suffices.
  const bool sample = !all && size() >= uint64_t{kSampleAboveEntriesPerShard} * num_shards_;
  const int scan = sample ? std::min(num_shards_, kSampledShards) : num_shards_;
  const uint32_t start = evict_cursor_.fetch_add(scan, std::memory_order_relaxed);
  auto evictable = [match](const PolicyHook* h) { return Evictable(h, match); };
  VictimShard best;
  for (int i = 0; i < scan; ++i) {
    Shard& s = shards_[(start + i) & (num_shards_ - 1)];
    absl::MutexLock lock(&s.mu);
    if (s.class_entries[cls] == 0) continue;
    const PolicyHook* victim = s.policies[cls]->PickVictim(evictable);
    if (victim == nullptr) continue;
    const uint64_t rank = s.policies[cls]->VictimRank(victim);
    if (best.shard == nullptr || rank < best.rank) best = {&s, rank};
  }
  return best;
}

ChunkRef ChunkIndex::EvictFrom(Shard& s, int cls, const NamespaceMatch* match, uint64_t max_rank,
                               EvictedEntry* victim) {
  auto evictable = [match](const PolicyHook* h) { return Evictable(h, match); };
  const int64_t now_ns = NowNs();
  ParentLink parent;
  ChunkRef chunk;
  {
    absl::MutexLock lock(&s.mu);
    if (s.class_entries[cls] == 0) return nullptr;
    EvictionPolicy& policy = *s.policies[cls];
    PolicyHook* hook = policy.PickVictim(evictable);
    if (hook == nullptr || policy.VictimRank(hook) > max_rank) return nullptr;
    auto* e = static_cast<IndexEntry*>(hook);
    if (victim != nullptr) *victim = {e->id, e->hits, e->size_bytes, KeepBelowDram(*e, now_ns)};
    CounterSnapshot& c = s.counters[e->id.ns];
    ++c.evictions;
    if (e->eviction_class >= EvictionClass::kHigh) ++c.hint_drops;
    if (match != nullptr) ++c.quota_evictions;
    chunk = RemoveLocked(s, e, &parent);
  }
  DropChild(parent);
  return chunk;
}

void ChunkIndex::AddCounters(const Key128& ns, const CounterSnapshot& delta) {
  Shard& s = ShardFor(ChunkId{ns, Key128{}});
  absl::MutexLock lock(&s.mu);
  Accumulate(&s.counters[ns], delta);
}

std::vector<ColdEntry> ChunkIndex::Coldest(uint64_t max_bytes, int max_entries) const {
  const int64_t now_ns = NowNs();
  std::vector<ColdEntry> out;
  for (int i = 0; i < num_shards_; ++i) {
    Shard& s = shards_[i];
    absl::ReaderMutexLock lock(&s.mu);
    uint64_t bytes = 0;
    int entries = 0;
    // The classes in eviction order, sharing the shard's budget.
    for (int cls = 0; cls < kEvictableClasses && entries < max_entries && bytes < max_bytes;
         ++cls) {
      const EvictionPolicy& policy = *s.policies[cls];
      policy.VisitColdest([&](const PolicyHook* h) {
        const auto* e = static_cast<const IndexEntry*>(h);
        out.push_back({e->id, policy.VictimRank(h), e->size_bytes, e->eviction_class, e->hits,
                       KeepBelowDram(*e, now_ns)});
        bytes += e->size_bytes;
        return ++entries < max_entries && bytes < max_bytes;
      });
    }
  }
  return out;
}

ChunkRef ChunkIndex::Peek(const ChunkId& id) const {
  Shard& s = ShardFor(id);
  absl::ReaderMutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  return it == s.entries.end() ? nullptr : it->second->chunk;
}

ProbeResult ChunkIndex::Probe(const ChunkId& id, bool take_lease, uint64_t session_id) {
  const int64_t now_ns = session_id != 0 ? NowNs() : 0;
  Shard& s = ShardFor(id);
  absl::MutexLock lock(&s.mu);
  auto it = s.entries.find(id);
  if (it == s.entries.end()) return {};
  IndexEntry& e = *it->second;
  // The policy learns of the use now; the hit counts once, at the fetch (see hits).
  if (EvictionPolicy* p = PolicyOf(s, &e)) p->OnAccess(&e);
  if (session_id != 0 && !e.pinned && e.session_id != session_id &&
      JoinSessionLocked(&e, session_id)) {
    Reclassify(s, &e, now_ns);  // a chunk follows the session that used it last
  }
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
