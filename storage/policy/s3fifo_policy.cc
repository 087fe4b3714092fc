#include "storage/policy/s3fifo_policy.h"

#include <algorithm>

namespace kvstash::storage {

void S3FifoPolicy::OnInsert(PolicyHook* hook) {
  hook->word1 = 0;
  ++entries_;
  if (TakeGhost(hook->key_hash)) {
    PushMain(hook);
    return;
  }
  hook->word0 = kSmall;
  hook->stamp = PolicyClockNanos();
  small_.PushFront(hook);
  small_bytes_ += hook->size_bytes;
}

void S3FifoPolicy::PushMain(PolicyHook* hook) {
  hook->word0 = kMain;
  hook->stamp = PolicyClockNanos();
  main_.PushFront(hook);
  main_bytes_ += hook->size_bytes;
}

void S3FifoPolicy::OnAccess(PolicyHook* hook) {
  if (hook->word1 < kMaxFrequency) ++hook->word1;
}

void S3FifoPolicy::OnErase(PolicyHook* hook) {
  --entries_;
  if (hook->word0 == kMain) {
    main_.Remove(hook);
    main_bytes_ -= hook->size_bytes;
    return;
  }
  small_.Remove(hook);
  small_bytes_ -= hook->size_bytes;
  // Only unread small entries are evicted from there; remembering them lets a key that
  // returns soon skip the small queue.
  if (hook->word1 == 0) RememberGhost(hook->key_hash);
}

PolicyHook* S3FifoPolicy::PickVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) {
  // Decided once: promotions out of small must not switch queues half-way, or VisitColdest
  // could not predict the victim.
  const bool small_first = SmallFirst();
  if (small_first) {
    if (PolicyHook* v = PickFromSmall(evictable)) return v;
  }
  if (PolicyHook* v = PickFromMain(evictable)) return v;
  if (!small_first) {
    if (PolicyHook* v = PickFromSmall(evictable)) return v;
  }
  return PickFromMain(evictable);  // entries promoted out of small just now
}

PolicyHook* S3FifoPolicy::PickFromSmall(absl::FunctionRef<bool(const PolicyHook*)> evictable) {
  for (PolicyHook* h = small_.back(); h != nullptr;) {
    PolicyHook* prev = small_.prev(h);
    if (!evictable(h)) {
      h = prev;  // refused entries (leased, another tenant's) keep their state
      continue;
    }
    if (h->word1 == 0) return h;
    small_.Remove(h);
    small_bytes_ -= h->size_bytes;
    h->word1 = 0;
    PushMain(h);
    h = prev;
  }
  return nullptr;
}

PolicyHook* S3FifoPolicy::PickFromMain(absl::FunctionRef<bool(const PolicyHook*)> evictable) {
  // Ends: every step lowers a frequency or moves the cursor nearer the front; entries
  // reinserted at the front are met again after the rest, as in the queue itself.
  // Refused entries (leased, another tenant's) are passed over untouched, so a filtered
  // eviction never ages the frequencies of entries it may not take.
  for (PolicyHook* h = main_.back(); h != nullptr;) {
    if (!evictable(h)) {
      h = main_.prev(h);
      continue;
    }
    if (h->word1 == 0) return h;
    PolicyHook* prev = main_.prev(h);
    --h->word1;
    h->stamp = PolicyClockNanos();
    if (prev == nullptr) continue;  // already the front: it meets the tail again at once
    main_.Remove(h);
    main_.PushFront(h);
    h = prev;
  }
  return nullptr;
}

void S3FifoPolicy::VisitColdest(absl::FunctionRef<bool(const PolicyHook*)> visit) const {
  const bool small_first = SmallFirst();
  // Visits `list` from its tail, entries whose frequency `pick` accepts; false: stop.
  auto pass = [&](const HookList& list, auto pick) {
    for (const PolicyHook* h = list.back(); h != nullptr; h = list.prev(h)) {
      if (pick(h->word1) && !visit(h)) return false;
    }
    return true;
  };
  auto unread = [](uint32_t f) { return f == 0; };
  auto read = [](uint32_t f) { return f > 0; };
  if (small_first && !pass(small_, unread)) return;
  if (!pass(main_, unread)) return;
  if (small_first && !pass(small_, read)) return;  // promoted, then first in main
  for (uint32_t f = 1; f <= kMaxFrequency; ++f) {
    if (!pass(main_, [f](uint32_t x) { return x == f; })) return;
  }
  if (!small_first && pass(small_, unread)) pass(small_, read);
}

uint64_t S3FifoPolicy::VictimRank(const PolicyHook* victim) const {
  const bool from_small = victim->word0 == kSmall && SmallOverTarget();
  return (from_small ? 0 : uint64_t{1} << 63) | (victim->stamp & ~(uint64_t{1} << 63));
}

void S3FifoPolicy::RememberGhost(uint64_t key_hash) {
  if (key_hash == 0) return;
  ghosts_[key_hash] = ++ghost_sequence_;
  ghost_order_.emplace_back(key_hash, ghost_sequence_);
  const size_t limit = std::max(kMinGhosts, entries_);
  while (ghost_order_.size() > limit) {
    const auto [key, sequence] = ghost_order_.front();
    ghost_order_.pop_front();
    auto it = ghosts_.find(key);
    if (it != ghosts_.end() && it->second == sequence) ghosts_.erase(it);
  }
}

bool S3FifoPolicy::TakeGhost(uint64_t key_hash) {
  if (key_hash == 0) return false;
  auto it = ghosts_.find(key_hash);
  if (it == ghosts_.end()) return false;
  ghosts_.erase(it);
  return true;
}

}  // namespace kvstash::storage
