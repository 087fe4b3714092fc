#include "storage/policy/lru_policy.h"

namespace kvstash::storage {

void LruPolicy::OnInsert(PolicyHook* hook) {
  hook->stamp = PolicyClockNanos();
  list_.PushFront(hook);
}

void LruPolicy::OnAccess(PolicyHook* hook) {
  hook->stamp = PolicyClockNanos();
  if (list_.front() == hook) return;  // hot entry: skip the relink
  list_.Remove(hook);
  list_.PushFront(hook);
}

PolicyHook* LruPolicy::PickVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) {
  for (PolicyHook* h = list_.back(); h != nullptr; h = list_.prev(h)) {
    if (evictable(h)) return h;
  }
  return nullptr;
}

void LruPolicy::VisitColdest(absl::FunctionRef<bool(const PolicyHook*)> visit) const {
  for (const PolicyHook* h = list_.back(); h != nullptr; h = list_.prev(h)) {
    if (!visit(h)) return;
  }
}

}  // namespace kvstash::storage
