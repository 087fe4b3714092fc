// EvictionPolicy: decides which chunk of a tier goes first when space is short.
//
// Policies are intrusive: every index entry embeds a PolicyHook, and a policy links hooks
// into its own lists (HookList below) and may keep a few words of state in them, so that
// insert/access/erase cost no allocation and no extra hash lookup. Implemented: "lru",
// "s3fifo" (small/main FIFO queues and a ghost set of keys), "tinylfu" (window LRU and
// segmented main LRU behind a frequency sketch) and "chain" (leaves before chunks that
// have cached children, LRU within each group). The index keeps one policy instance per
// shard and per eviction class (the NVMe tier one of its own), so a policy never sees two
// shards, classes or tiers; VictimRank lets the index compare the shards' candidates so
// that the class as a whole follows the policy.
//
// Thread-safety: not thread-safe. The owner (an index shard) serialises every call under
// its mutex.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace kvstash::storage {

// Policy-owned state embedded in each index entry. The owner sets size_bytes and
// key_hash before OnInsert and maintains children; everything else belongs to the policy.
struct PolicyHook {
  PolicyHook* prev = nullptr;
  PolicyHook* next = nullptr;
  uint64_t size_bytes = 0;
  // A well-mixed hash of the entry's key, stable while it is cached: frequency sketches
  // and ghost sets remember keys that are no longer (or not yet) cached by it. 0: unknown.
  uint64_t key_hash = 0;
  uint64_t stamp = 0;  // e.g. last access time, for VictimRank
  uint32_t word0 = 0;
  uint32_t word1 = 0;
  // Cached chunks that name this one as their parent (PutHints::parent); maintained by the
  // index, which calls EvictionPolicy::OnChildrenChanged when it goes 0 <-> non-zero.
  uint32_t children = 0;
};

// Circular doubly-linked list of hooks with a sentinel. Does not own the hooks.
class HookList {
 public:
  HookList() { head_.prev = head_.next = &head_; }
  HookList(const HookList&) = delete;
  HookList& operator=(const HookList&) = delete;

  bool empty() const { return head_.next == &head_; }
  void PushFront(PolicyHook* h) { Link(&head_, h); }
  void PushBack(PolicyHook* h) { Link(head_.prev, h); }
  // h goes next to pos, on its front side (Before) or its back side (After).
  // REQUIRES: pos is in this list.
  void InsertBefore(PolicyHook* pos, PolicyHook* h) { Link(pos->prev, h); }
  void InsertAfter(PolicyHook* pos, PolicyHook* h) { Link(pos, h); }
  // REQUIRES: h is in this list.
  void Remove(PolicyHook* h) {
    h->prev->next = h->next;
    h->next->prev = h->prev;
    h->prev = h->next = nullptr;
  }
  PolicyHook* front() const { return empty() ? nullptr : head_.next; }
  PolicyHook* back() const { return empty() ? nullptr : head_.prev; }
  // Neighbours of a listed hook; nullptr at either end.
  PolicyHook* next(const PolicyHook* h) const { return h->next == &head_ ? nullptr : h->next; }
  PolicyHook* prev(const PolicyHook* h) const { return h->prev == &head_ ? nullptr : h->prev; }

 private:
  static void Link(PolicyHook* pos, PolicyHook* h) {
    h->prev = pos;
    h->next = pos->next;
    pos->next->prev = h;
    pos->next = h;
  }
  // Sentinel; mutable so const readers can hand out links without a cast.
  mutable PolicyHook head_;
};

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;

  virtual absl::string_view name() const = 0;
  // A new entry enters the tier.
  virtual void OnInsert(PolicyHook* hook) = 0;
  // The entry was read.
  virtual void OnAccess(PolicyHook* hook) = 0;
  // The entry leaves the tier (evicted or deleted). REQUIRES: hook was inserted.
  virtual void OnErase(PolicyHook* hook) = 0;
  // hook->children went from 0 to non-zero or back. Chain-aware policies evict leaves
  // (children == 0) first; others ignore it. REQUIRES: hook was inserted.
  virtual void OnChildrenChanged(PolicyHook* hook) { (void)hook; }
  // The entry to evict next among those `evictable` accepts (the index refuses leased and
  // referenced entries), or nullptr when none is. Does not remove it: if the caller evicts
  // it, it calls OnErase. May reorder the state of entries `evictable` accepts (e.g.
  // S3-FIFO promotions), never of refused ones: a tenant-filtered eviction must not age
  // other tenants' entries.
  virtual PolicyHook* PickVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) = 0;
  // Calls `visit` on entries in the order PickVictim would take them (coldest first),
  // evictable or not, until it returns false or every entry was seen. Must not change
  // state: the NVMe cleaner uses it to write the next victims ahead of eviction.
  virtual void VisitColdest(absl::FunctionRef<bool(const PolicyHook*)> visit) const = 0;
  // Orders victims of different instances of this policy (one per shard): the index
  // evicts the candidate with the smallest rank. E.g. LRU: last access time. Also ranks
  // the entries VisitColdest hands out, so the cleaner can merge shards.
  virtual uint64_t VictimRank(const PolicyHook* victim) const = 0;
  // Heap bytes the policy keeps per entry beyond the embedded hook, at worst (ghost keys,
  // sketch counters); the store charges them to the DRAM budget with the index's own.
  virtual uint64_t BytesPerEntry() const { return 0; }
};

using EvictionPolicyPtr = std::unique_ptr<EvictionPolicy>;

// Steady-clock nanoseconds: the time base of the policies' stamps, shared by every instance
// so that ranks built from it compare across shards. Inside a PolicyClockBatch on the
// calling thread: the batch's one reading.
uint64_t PolicyClockNanos();

// Makes the accesses of one batched call (a 1,000-key Lookup) share one clock reading: a
// clock read per key was a fifth of such a call. Within its scope, PolicyClockNanos() on
// this thread returns the reading taken when the outermost batch began, so a stamp may
// trail one another thread wrote meanwhile by up to the batch's duration: list positions
// and ranks order accesses to within one call.
// Thread-compatible: lives on one thread's stack; batches nest.
class PolicyClockBatch {
 public:
  PolicyClockBatch();
  ~PolicyClockBatch();
  PolicyClockBatch(const PolicyClockBatch&) = delete;
  PolicyClockBatch& operator=(const PolicyClockBatch&) = delete;

 private:
  uint64_t outer_;  // the enclosing batch's reading; 0 outside any
};

}  // namespace kvstash::storage
