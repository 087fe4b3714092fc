// S3FifoPolicy: S3-FIFO (Yang et al., SOSP 2023). New entries enter a small FIFO queue
// holding ~10% of the bytes; an entry read while there moves to the main FIFO queue when
// it reaches the small queue's tail, the others are evicted and their keys remembered in a
// ghost set. A key that comes back while still a ghost enters the main queue directly. The
// main queue reinserts entries read since they last passed its tail (a 2-bit frequency,
// decremented per pass) and evicts the rest. A one-hit scan therefore churns through the
// small queue only, and never evicts an entry that was read in the main queue.
//
// Hook use: word0 = queue (small or main), word1 = frequency (0..3), stamp = time the
// entry entered its queue, key_hash = ghost key (0: no key, never a ghost).
//
// Thread-safety: not thread-safe (see EvictionPolicy).
#pragma once

#include <cstdint>
#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "storage/policy/eviction_policy.h"

namespace kvstash::storage {

class S3FifoPolicy final : public EvictionPolicy {
 public:
  static constexpr absl::string_view kName = "s3fifo";

  absl::string_view name() const override { return kName; }
  void OnInsert(PolicyHook* hook) override;
  // Raises the entry's frequency only; nothing moves until it reaches a queue's tail.
  void OnAccess(PolicyHook* hook) override;
  // An unread small-queue entry becomes a ghost (a deleted one too: the policy cannot tell).
  void OnErase(PolicyHook* hook) override;
  // Promotes or reinserts the read evictable entries it passes at the tails (its only
  // state change); entries `evictable` refuses keep their places and frequencies.
  PolicyHook* PickVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) override;
  // Entries with frequency 0 of the queue PickVictim evicts from first, then the other
  // queue's, then the read ones by rising frequency.
  void VisitColdest(absl::FunctionRef<bool(const PolicyHook*)> visit) const override;
  // Victims of an oversized small queue rank below every main-queue victim, so that the
  // shards together keep the small queue near its share; within a class, FIFO order.
  uint64_t VictimRank(const PolicyHook* victim) const override;
  // Ghosts are bounded by the entries (plus kMinGhosts per instance): one hash-map slot at
  // the lowest load after growing, and one queue record, per entry.
  uint64_t BytesPerEntry() const override {
    using Record = std::pair<uint64_t, uint64_t>;
    return (sizeof(Record) + 1) * 16 / 7 + sizeof(Record);
  }

 private:
  enum Queue : uint32_t { kSmall = 0, kMain = 1 };
  static constexpr uint32_t kMaxFrequency = 3;
  static constexpr uint64_t kSmallPercent = 10;
  // Ghosts kept beyond the number of cached entries (a shard with few entries still
  // recognises a few returning keys).
  static constexpr size_t kMinGhosts = 16;

  bool SmallOverTarget() const {
    return small_bytes_ * 100 > (small_bytes_ + main_bytes_) * kSmallPercent;
  }
  // Evicts from small first when it holds more than its share (or main is empty).
  bool SmallFirst() const { return !small_.empty() && (SmallOverTarget() || main_.empty()); }
  void PushMain(PolicyHook* hook);
  PolicyHook* PickFromSmall(absl::FunctionRef<bool(const PolicyHook*)> evictable);
  PolicyHook* PickFromMain(absl::FunctionRef<bool(const PolicyHook*)> evictable);
  void RememberGhost(uint64_t key_hash);
  // Whether key_hash was a ghost; forgets it.
  bool TakeGhost(uint64_t key_hash);

  HookList small_;  // front = newest
  HookList main_;
  uint64_t small_bytes_ = 0;
  uint64_t main_bytes_ = 0;
  size_t entries_ = 0;
  // Ghost keys with the sequence of their last entry in ghost_order_ (oldest first); an
  // older entry of a re-remembered key is skipped when it expires.
  absl::flat_hash_map<uint64_t, uint64_t> ghosts_;
  std::deque<std::pair<uint64_t, uint64_t>> ghost_order_;
  uint64_t ghost_sequence_ = 0;
};

}  // namespace kvstash::storage
