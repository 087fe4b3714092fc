// TinyLfuPolicy: W-TinyLFU (Einziger et al., as in Caffeine). New entries enter a small
// window LRU (~1% of the bytes); the window's overflow become candidates for the main
// region, a segmented LRU (probation, and protected ~80% of main for entries read while
// there). When a victim is needed, the oldest candidate is compared with the main
// region's victim by estimated recent frequency (a count-min sketch of inserts and reads,
// halved periodically, keyed by PolicyHook::key_hash): the less frequent one is evicted,
// the candidate on a tie, and a candidate that wins joins probation. A one-hit scan is
// thus evicted from the candidates and cannot flush entries read more often.
//
// Hook use: word0 = region (window, candidate, probation, protected), stamp = last insert
// or read.
//
// Thread-safety: not thread-safe (see EvictionPolicy).
#pragma once

#include <cstdint>

#include "storage/policy/eviction_policy.h"
#include "storage/policy/frequency_sketch.h"

namespace kvstash::storage {

class TinyLfuPolicy final : public EvictionPolicy {
 public:
  static constexpr absl::string_view kName = "tinylfu";

  absl::string_view name() const override { return kName; }
  void OnInsert(PolicyHook* hook) override;
  void OnAccess(PolicyHook* hook) override;
  void OnErase(PolicyHook* hook) override;
  // Admits the candidates that beat the main victim into probation (its only state
  // change); unevictable entries are skipped and keep their places.
  PolicyHook* PickVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) override;
  // Losing candidates, probation, winning candidates, protected, then the window.
  void VisitColdest(absl::FunctionRef<bool(const PolicyHook*)> visit) const override;
  // Estimated frequency first, then last access: the shards together evict the least
  // frequent candidates.
  uint64_t VictimRank(const PolicyHook* victim) const override;
  uint64_t BytesPerEntry() const override { return FrequencySketch::kMaxBytesPerKey; }

  // The sketch's estimate for `hook`'s key (tests).
  uint32_t Frequency(const PolicyHook* hook) const { return sketch_.Estimate(hook->key_hash); }

 private:
  enum Region : uint32_t { kWindow = 0, kCandidate = 1, kProbation = 2, kProtected = 3 };
  static constexpr uint64_t kWindowPercent = 1;
  static constexpr uint64_t kProtectedPercent = 80;  // of the main region

  HookList& List(uint32_t region);
  void Push(PolicyHook* hook, Region region);  // at the front
  void Unlink(PolicyHook* hook);
  // Moves window overflow to the candidates, keeping the newest entry in the window.
  void BalanceWindow();
  // Moves protected overflow back to probation, keeping the newest protected entry.
  void BalanceProtected();
  // The main region's next victim: probation's tail first, then protected's.
  PolicyHook* MainVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) const;
  static PolicyHook* Coldest(const HookList& list,
                             absl::FunctionRef<bool(const PolicyHook*)> evictable);

  HookList lists_[4];       // by Region; front = newest
  uint64_t bytes_[4] = {};  // by Region
  uint64_t total_bytes_ = 0;
  size_t entries_ = 0;
  FrequencySketch sketch_;
};

}  // namespace kvstash::storage
