// ChunkIndex: the sharded map from ChunkId to the chunk's entry (bytes, tier, lease count,
// policy state, hints), with per-shard eviction policies and per-shard namespace counters.
//
// Hints (kvstash/hints.h) sort entries into eviction classes (EvictionClass), each with a
// policy instance of its own per shard: eviction takes the policy's victim in the lowest
// non-empty class, so kLow goes before kNormal before kHigh, and protected chunks (unexpired
// TTL, then an active session) only when nothing ordinary is left; pinned entries are in no
// policy and never evicted. Choosing the class costs one relaxed counter read per class,
// plus, while any entry has a TTL, one lock per shard to expire lapsed TTLs (a btree by
// deadline: O(1) when none lapsed). An entry changing class (TTL expiry, session end, pin)
// leaves one policy and enters another as its most recent entry.
//
// Each shard has its own mutex, hash map, policy instances and counters, so the hot path
// (Get, Lookup, Insert) never takes a global lock. Eviction compares the victims that the
// shards' policies propose (EvictionPolicy::VictimRank) and evicts the best one: exact for
// LRU while the index is small, a sample of shards once each holds many entries.
//
// Entries hold a ChunkRef; methods that remove an entry return it so the caller releases the
// bytes after the shard lock is dropped.
//
// Child counts (PolicyHook::children, for chain-aware eviction): a chunk put with a parent
// (PutHints::parent, same namespace) counts once in its parent's entry while both are
// cached. Parent and child may sit in different shards and no method holds two shard locks,
// so the count is approximate in two documented ways: a parent inserted after its child
// starts at 0 (the child was put before it existed), and for a moment around a concurrent
// insert or removal a count may include a child not yet (or no longer) indexed. Removing a
// parent forgets its count; its children never decrement a later entry of the same key
// (they remember the parent's generation). A child also lends its parent its protection
// (TTL deadline, session) when added, so that hints never keep a chain's tail cached after
// its head was evicted (see AddChild).
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kvstash/hints.h"
#include "kvstash/keys.h"
#include "storage/chunk.h"
#include "storage/policy/eviction_policy.h"

namespace kvstash::storage {

// Heap bytes glibc's malloc adds to a small allocation (header and rounding), at worst.
inline constexpr uint64_t kMallocOverheadBytes = 16;

// Eviction order of index entries, least protected first. A chunk's class follows from its
// hints: pinned > active session > unexpired TTL > its priority.
enum class EvictionClass : uint8_t { kLow, kNormal, kHigh, kTtl, kSession, kPinned };
// Classes eviction takes from (all but kPinned).
inline constexpr int kEvictableClasses = 5;

// One chunk in the index; owned by its shard and guarded by the shard's mutex. The policy
// hook is the base so policies hand back entries without a lookup.
struct IndexEntry : PolicyHook {
  ChunkId id;
  ChunkRef chunk;
  Tier tier = Tier::kNone;
  uint64_t generation = 0;  // unique per insert, see LeaseTable
  uint32_t lease_refs = 0;  // leases holding this entry; > 0 blocks eviction
  // Gets that found it (saturating): its uses. A Lookup hit is not counted (it only tells
  // the policy), so a lookup and the fetch that follows count one use, as NVMe admission
  // (admission_min_hits) means it.
  uint32_t hits = 0;
  // Hints (kvstash/hints.h) as they stand now; eviction_class follows from them.
  Priority priority = Priority::kNormal;
  EvictionClass eviction_class = EvictionClass::kNormal;
  bool pinned = false;
  uint64_t session_id = 0;      // 0: none, or its session ended
  int64_t ttl_deadline_ns = 0;  // absl::ToUnixNanos of put time + ttl; 0: no TTL
  // The parent entry this one is counted in (PolicyHook::children), by id and generation;
  // parent_generation 0: not counted in any.
  ChunkId parent;
  uint64_t parent_generation = 0;
};

// What EvictOne removed, besides its bytes.
struct EvictedEntry {
  ChunkId id;
  uint32_t hits = 0;  // IndexEntry::hits at eviction
  uint64_t size_bytes = 0;
  // The entry's hints (session, pin, unexpired TTL) ask for demotion to NVMe whatever the
  // NVMe admission rule says.
  bool keep = false;
};

// A session of a namespace (PutHints::session_id).
struct SessionKey {
  Key128 ns;
  uint64_t id = 0;
  bool operator==(const SessionKey& o) const { return ns == o.ns && id == o.id; }
  template <typename H>
  friend H AbslHashValue(H h, const SessionKey& k) {
    return H::combine(std::move(h), k.ns, k.id);
  }
};

// What EraseNamespace removed.
struct ErasedChunks {
  std::vector<ChunkId> ids;
  uint64_t bytes = 0;
  uint64_t pinned_bytes = 0;
};

// What SetPinned found.
struct PinChange {
  bool present = false;  // the entry exists
  bool changed = false;  // its pinned state changed
  bool pinned = false;   // its pinned state now
  uint64_t size_bytes = 0;
};

// An entry near the cold end of its shard (see ChunkIndex::Coldest).
struct ColdEntry {
  ChunkId id;
  uint64_t rank = 0;  // EvictionPolicy::VictimRank: smaller is evicted sooner
  uint64_t size_bytes = 0;
  EvictionClass eviction_class = EvictionClass::kNormal;  // taken before rank
  uint32_t hits = 0;                                      // as in EvictedEntry
  bool keep = false;

  // Whether eviction takes this entry before `o` (of any shard): the less protected class
  // first, then the smaller rank. The one statement of the index's eviction order.
  bool EvictsBefore(const ColdEntry& o) const {
    return eviction_class != o.eviction_class ? eviction_class < o.eviction_class : rank < o.rank;
  }
};

// What Probe saw.
struct ProbeResult {
  Tier tier = Tier::kNone;  // kNone: absent
  uint64_t generation = 0;  // set when a lease ref was taken
};

class ChunkIndex {
 public:
  // REQUIRES: num_shards is a power of two >= 1.
  static absl::StatusOr<std::unique_ptr<ChunkIndex>> Create(int num_shards,
                                                            absl::string_view policy);
  ChunkIndex(const ChunkIndex&) = delete;
  ChunkIndex& operator=(const ChunkIndex&) = delete;

  // The clock TTL hints are measured with (default absl::Now).
  // REQUIRES: called before the index is shared with other threads.
  void SetClock(std::function<absl::Time()> clock) { clock_ = std::move(clock); }
  // Whether a session is still active (the store's SessionTable). Invariant: an entry
  // carries a session id only while that session is active or until the EndSessions that
  // follows its end, because an entry joins a session (Insert, Probe) only if this says
  // it is active, asked under the entry's shard lock. `is_active` may take its own lock
  // (shard lock, then its lock) and must never call the index. Unset: every session is.
  // REQUIRES: called before the index is shared with other threads.
  void SetSessionCheck(std::function<bool(const SessionKey&)> is_active) {
    session_active_ = std::move(is_active);
  }

  Tier Locate(const ChunkId& id) const;
  // Adds `chunk` unless `id` is present; counts a put unless !count_put (a promotion from a
  // lower tier is not a new put). Returns false (and leaves the index unchanged) when present.
  // `hints` place it in its eviction class (the caller checked the pin quota and the
  // session's bookkeeping); with hints.has_parent, the chunk counts as a child of
  // {id.ns, hints.parent} while both are cached (see the class comment).
  bool Insert(const ChunkId& id, ChunkRef chunk, Tier tier, bool count_put = true,
              const PutHints& hints = PutHints{});
  // The chunk, or null. Counts a hit, or a miss unless !count_miss (the caller then tries a
  // lower tier and reports the outcome with RecordGet), and tells the policy.
  ChunkRef Get(const ChunkId& id, bool count_miss = true);
  // Counts a get of `id` that Get(id, false) did not count.
  void RecordGet(const ChunkId& id, bool hit);
  // Removes the entry whatever its leases and pin; returns its chunk (null when absent) and
  // whether it was pinned.
  ChunkRef Erase(const ChunkId& id, bool* was_pinned = nullptr);
  // Removes every entry of `ns` (counted as deletes).
  ErasedChunks EraseNamespace(const Key128& ns);
  // Evicts the policy's best victim of the lowest non-empty eviction class; entries that
  // are leased or referenced outside the index are skipped, so releasing the returned ref
  // frees memory. Returns null when no entry is evictable. Describes the evicted entry in
  // *victim (when given). Evicting a kHigh, kTtl or kSession entry counts a hint_drop.
  ChunkRef EvictOne(EvictedEntry* victim = nullptr);
  // EvictOne among the entries whose namespace `match` accepts (a tenant over its quota;
  // counted as quota_evictions). Costs a walk past the colder entries it does not match.
  ChunkRef EvictOneMatching(absl::FunctionRef<bool(const Key128& ns)> match, EvictedEntry* victim);

  // Pins or unpins `id` (a pinned entry is never evicted). The caller holds the pin quota.
  PinChange SetPinned(const ChunkId& id, bool pin);
  // Whether `id` is present, its payload bytes and whether it is pinned (changed: false).
  PinChange Describe(const ChunkId& id) const;
  // Entries of the ended `sessions` lose their session protection. Costs a walk over the
  // session-protected entries of every shard.
  void EndSessions(absl::Span<const SessionKey> sessions);
  // Adds `delta` to the counters of `ns` (events the store counts: pin quota refusals,
  // NVMe quota evictions).
  void AddCounters(const Key128& ns, const CounterSnapshot& delta);

  // Up to `max_entries` entries of each shard from its cold end (the next victims), at
  // most `max_bytes` of payload per shard, in eviction order within the shard; unordered
  // across shards (sort with ColdEntry::EvictsBefore).
  std::vector<ColdEntry> Coldest(uint64_t max_bytes, int max_entries) const;
  // The chunk without counting a get or telling the policy (background readers), or null.
  ChunkRef Peek(const ChunkId& id) const;
  // Cached children counted in `id`'s entry (0 when absent); see the class comment.
  uint32_t Children(const ChunkId& id) const;

  // Presence and tier of `id` (a hit tells the policy, but is not one of the entry's hits:
  // the fetch that follows counts the use); with take_lease,
  // also raises its lease count; with session_id != 0, joins the hit to that session.
  ProbeResult Probe(const ChunkId& id, bool take_lease, uint64_t session_id = 0);
  // Undoes one take_lease Probe, unless the entry was replaced since (generation differs).
  void DropLeaseRef(const ChunkId& id, uint64_t generation);
  // Counts one prefix lookup of `ns` that hit `hit_chunks` chunks.
  void RecordLookup(const Key128& ns, const Key128& first_key, uint32_t hit_chunks);

  CounterSnapshot NamespaceCounters(const Key128& ns) const;
  std::vector<std::pair<Key128, CounterSnapshot>> AllNamespaceCounters() const;
  CounterSnapshot Totals() const;
  // Live chunks and their payload bytes in `tier`.
  std::pair<uint64_t, uint64_t> TierUsage(Tier tier) const;
  // Live entries in all tiers (a relaxed snapshot).
  uint64_t size() const { return size_.load(std::memory_order_relaxed); }
  // Heap bytes one entry costs the index at worst, derived from the structures' sizes so it
  // follows their changes: the entry with its allocation overhead, its hash-map slot at the
  // lowest load a table has after growing, a TTL queue node, and its policy's own
  // (EvictionPolicy::BytesPerEntry). Per-namespace counters and per-shard constants are
  // left out (they do not grow with the entries).
  uint64_t BytesPerEntry() const { return bytes_per_entry_; }

 private:
  static constexpr int kNumTiers = 4;
  struct alignas(64) Shard {
    mutable absl::Mutex mu;
    absl::flat_hash_map<ChunkId, std::unique_ptr<IndexEntry>> entries ABSL_GUARDED_BY(mu);
    // One policy per eviction class; a pinned entry is in none.
    EvictionPolicyPtr policies[kEvictableClasses] ABSL_GUARDED_BY(mu);
    uint64_t class_entries[kEvictableClasses] ABSL_GUARDED_BY(mu) = {};
    // The kTtl entries by deadline, so expiry finds them without a walk.
    absl::btree_set<std::pair<int64_t, IndexEntry*>> ttl_queue ABSL_GUARDED_BY(mu);
    absl::flat_hash_map<Key128, CounterSnapshot> counters ABSL_GUARDED_BY(mu);
    uint64_t tier_chunks[kNumTiers] ABSL_GUARDED_BY(mu) = {};
    uint64_t tier_bytes[kNumTiers] ABSL_GUARDED_BY(mu) = {};
  };

  // A parent an entry was counted in: what to uncount once the entry's lock is released.
  struct ParentLink {
    ChunkId id;
    uint64_t generation = 0;  // 0: none
  };

  explicit ChunkIndex(int num_shards);
  Shard& ShardFor(const ChunkId& id) const;
  // Unlinks `e` from the map, policy and live counters; returns its chunk. The caller
  // passes *parent to DropChild once it released s.mu.
  ChunkRef RemoveLocked(Shard& s, IndexEntry* e, ParentLink* parent)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // The protection a child asks its parent to share (see AddChild).
  struct ChildProtection {
    int64_t ttl_deadline_ns = 0;  // 0: none
    uint64_t session_id = 0;      // 0: none
  };
  // Counts a child in `parent` if cached; returns the link to undo it (generation 0: absent).
  // Also raises the parent's protection to the child's, so that a protected tail never
  // outlives its head: the parent's TTL deadline becomes at least the child's, and an
  // unpinned parent in no session joins the child's (if active). Not undone when the child
  // leaves or its insert fails: the parent keeps it until the TTL lapses or the session ends.
  // REQUIRES: no shard lock held (as DropChild).
  ParentLink AddChild(const ChunkId& parent, const ChildProtection& child, int64_t now_ns);
  void DropChild(const ParentLink& parent);
  // A hit: counts it in the entry and tells the policy.
  static void Touch(Shard& s, IndexEntry* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);

  // The policy holding `e`, or null when pinned.
  static EvictionPolicy* PolicyOf(Shard& s, const IndexEntry* e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // The class `e`'s hints give it at `now_ns`.
  static EvictionClass ClassOf(const IndexEntry& e, int64_t now_ns);
  // Whether `e`'s hints at `now_ns` (session, pin, unexpired TTL) ask for demotion to NVMe
  // whatever the admission rule says: EvictedEntry::keep and ColdEntry::keep.
  static bool KeepBelowDram(const IndexEntry& e, int64_t now_ns);
  // Moves `e` to the class its hints give it now (policy, ttl_queue, class counts).
  void Reclassify(Shard& s, IndexEntry* e, int64_t now_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Links a new or unpinned entry into the class its hints give it at `now_ns`.
  void Link(Shard& s, IndexEntry* e, int64_t now_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  void Unlink(Shard& s, IndexEntry* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  // Gives `e` session `session_id` if that session is active (see SetSessionCheck);
  // whether it did. REQUIRES: the lock of e's shard held.
  bool JoinSessionLocked(IndexEntry* e, uint64_t session_id) const;
  // Entries of `s` whose TTL ran out by `now_ns` become ordinary.
  void ExpireTtls(Shard& s, int64_t now_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu);
  int64_t NowNs() const { return absl::ToUnixNanos(clock_ ? clock_() : absl::Now()); }
  using NamespaceMatch = absl::FunctionRef<bool(const Key128& ns)>;
  // Whether eviction may take `h`: unleased, unreferenced outside the index, and of a
  // namespace `match` accepts (null: any).
  static bool Evictable(const PolicyHook* h, const NamespaceMatch* match);
  ChunkRef EvictImpl(const NamespaceMatch* match, EvictedEntry* victim);
  struct VictimShard {
    Shard* shard = nullptr;  // null: no scanned shard has an evictable entry
    uint64_t rank = 0;       // its candidate's EvictionPolicy::VictimRank
  };
  // The shard whose class `cls` policy victim ranks first among the scanned shards (a
  // sample when the index is large, all of them when `all`).
  VictimShard BestVictimShard(int cls, const NamespaceMatch* match, bool all);
  // Evicts the class `cls` policy victim of `s` if it ranks at most `max_rank`, else null.
  ChunkRef EvictFrom(Shard& s, int cls, const NamespaceMatch* match, uint64_t max_rank,
                     EvictedEntry* victim);

  static constexpr int kEvictAttempts = 32;
  static constexpr int kSampledShards = 8;
  static constexpr int kSampleAboveEntriesPerShard = 64;

  const int num_shards_;
  uint64_t bytes_per_entry_ = 0;  // set by Create
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint64_t> next_generation_{1};
  std::atomic<uint32_t> evict_cursor_{0};
  std::atomic<uint64_t> size_{0};
  std::atomic<uint64_t> class_size_[kEvictableClasses] = {};
  std::function<absl::Time()> clock_;
  std::function<bool(const SessionKey&)> session_active_;
};

}  // namespace kvstash::storage
