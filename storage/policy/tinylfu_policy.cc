#include "storage/policy/tinylfu_policy.h"

#include <algorithm>

namespace kvstash::storage {

HookList& TinyLfuPolicy::List(uint32_t region) { return lists_[region]; }

void TinyLfuPolicy::Push(PolicyHook* hook, Region region) {
  hook->word0 = region;
  lists_[region].PushFront(hook);
  bytes_[region] += hook->size_bytes;
}

void TinyLfuPolicy::Unlink(PolicyHook* hook) {
  lists_[hook->word0].Remove(hook);
  bytes_[hook->word0] -= hook->size_bytes;
}

void TinyLfuPolicy::OnInsert(PolicyHook* hook) {
  hook->stamp = PolicyClockNanos();
  ++entries_;
  total_bytes_ += hook->size_bytes;
  sketch_.EnsureCapacity(entries_);
  sketch_.Increment(hook->key_hash);
  Push(hook, kWindow);
  BalanceWindow();
}

void TinyLfuPolicy::OnAccess(PolicyHook* hook) {
  hook->stamp = PolicyClockNanos();
  sketch_.Increment(hook->key_hash);
  const uint32_t region = hook->word0;
  if (region != kCandidate && region != kProbation && List(region).front() == hook) {
    return;  // hot entry: skip the relink
  }
  Unlink(hook);
  // A read in the main region (or as a candidate) earns protection.
  Push(hook, region == kWindow ? kWindow : kProtected);
  if (region != kWindow) BalanceProtected();
}

void TinyLfuPolicy::OnErase(PolicyHook* hook) {
  Unlink(hook);
  --entries_;
  total_bytes_ -= hook->size_bytes;
}

void TinyLfuPolicy::BalanceWindow() {
  HookList& window = lists_[kWindow];
  while (bytes_[kWindow] * 100 > total_bytes_ * kWindowPercent && window.back() != window.front()) {
    PolicyHook* h = window.back();
    Unlink(h);
    Push(h, kCandidate);
  }
}

void TinyLfuPolicy::BalanceProtected() {
  HookList& prot = lists_[kProtected];
  const uint64_t main_bytes = bytes_[kProbation] + bytes_[kProtected];
  while (bytes_[kProtected] * 100 > main_bytes * kProtectedPercent && prot.back() != prot.front()) {
    PolicyHook* h = prot.back();
    Unlink(h);
    Push(h, kProbation);
  }
}

PolicyHook* TinyLfuPolicy::Coldest(const HookList& list,
                                   absl::FunctionRef<bool(const PolicyHook*)> evictable) {
  for (PolicyHook* h = list.back(); h != nullptr; h = list.prev(h)) {
    if (evictable(h)) return h;
  }
  return nullptr;
}

PolicyHook* TinyLfuPolicy::MainVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) const {
  if (PolicyHook* v = Coldest(lists_[kProbation], evictable)) return v;
  return Coldest(lists_[kProtected], evictable);
}

PolicyHook* TinyLfuPolicy::PickVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) {
  // Ends: each round admits one candidate (removing it from the candidates) or returns.
  while (PolicyHook* candidate = Coldest(lists_[kCandidate], evictable)) {
    PolicyHook* victim = MainVictim(evictable);
    if (victim == nullptr || Frequency(candidate) <= Frequency(victim)) return candidate;
    Unlink(candidate);
    Push(candidate, kProbation);
  }
  if (PolicyHook* v = MainVictim(evictable)) return v;
  return Coldest(lists_[kWindow], evictable);
}

void TinyLfuPolicy::VisitColdest(absl::FunctionRef<bool(const PolicyHook*)> visit) const {
  const PolicyHook* main_victim = lists_[kProbation].back();
  if (main_victim == nullptr) main_victim = lists_[kProtected].back();
  const uint32_t victim_frequency = main_victim == nullptr ? 0 : Frequency(main_victim);
  auto loses = [&](const PolicyHook* c) {
    return main_victim == nullptr || Frequency(c) <= victim_frequency;
  };
  // Visits `list` from its tail, entries `pick` accepts; false: stop.
  auto pass = [&](const HookList& list, auto pick) {
    for (const PolicyHook* h = list.back(); h != nullptr; h = list.prev(h)) {
      if (pick(h) && !visit(h)) return false;
    }
    return true;
  };
  auto all = [](const PolicyHook*) { return true; };
  if (!pass(lists_[kCandidate], loses)) return;
  if (!pass(lists_[kProbation], all)) return;
  if (!pass(lists_[kCandidate], [&](const PolicyHook* c) { return !loses(c); })) return;
  if (!pass(lists_[kProtected], all)) return;
  pass(lists_[kWindow], all);
}

uint64_t TinyLfuPolicy::VictimRank(const PolicyHook* victim) const {
  // 4 bits of frequency above 58 bits of 64 ns ticks (good for ~580 years of uptime).
  return uint64_t{std::min(Frequency(victim), FrequencySketch::kMaxCount)} << 58 |
         (victim->stamp >> 6);
}

}  // namespace kvstash::storage
