#include "storage/policy/chain_policy.h"

namespace kvstash::storage {

void ChainPolicy::OnInsert(PolicyHook* hook) {
  hook->stamp = PolicyClockNanos();
  hook->word0 = hook->children > 0 ? kParent : kLeaf;
  List(hook).PushFront(hook);
}

void ChainPolicy::OnAccess(PolicyHook* hook) {
  hook->stamp = PolicyClockNanos();
  HookList& list = List(hook);
  if (list.front() == hook) return;  // hot entry: skip the relink
  list.Remove(hook);
  list.PushFront(hook);
}

void ChainPolicy::OnChildrenChanged(PolicyHook* hook) {
  const uint32_t group = hook->children > 0 ? kParent : kLeaf;
  if (group == hook->word0) return;
  List(hook).Remove(hook);
  hook->word0 = group;
  HookList& list = List(hook);
  if (group == kLeaf) {
    // From the cold end: behind the first entry at least as recent.
    PolicyHook* p = list.back();
    while (p != nullptr && p->stamp < hook->stamp) p = list.prev(p);
    if (p == nullptr) {
      list.PushFront(hook);
    } else {
      list.InsertAfter(p, hook);
    }
  } else {
    // From the hot end: in front of the first entry at most as recent.
    PolicyHook* p = list.front();
    while (p != nullptr && p->stamp > hook->stamp) p = list.next(p);
    if (p == nullptr) {
      list.PushBack(hook);
    } else {
      list.InsertBefore(p, hook);
    }
  }
}

PolicyHook* ChainPolicy::PickVictim(absl::FunctionRef<bool(const PolicyHook*)> evictable) {
  for (const HookList* list : {&leaves_, &parents_}) {
    for (PolicyHook* h = list->back(); h != nullptr; h = list->prev(h)) {
      if (evictable(h)) return h;
    }
  }
  return nullptr;
}

void ChainPolicy::VisitColdest(absl::FunctionRef<bool(const PolicyHook*)> visit) const {
  for (const HookList* list : {&leaves_, &parents_}) {
    for (const PolicyHook* h = list->back(); h != nullptr; h = list->prev(h)) {
      if (!visit(h)) return;
    }
  }
}

uint64_t ChainPolicy::VictimRank(const PolicyHook* victim) const {
  return (victim->word0 == kParent ? uint64_t{1} << 63 : 0) |
         (victim->stamp & ~(uint64_t{1} << 63));
}

}  // namespace kvstash::storage
