#include "storage/lease_table.h"

#include <algorithm>

namespace kvstash::storage {

uint64_t LeaseTable::Add(absl::Time deadline, std::vector<Hold> holds) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  leases_[id] = Lease{deadline, std::move(holds)};
  due_.push({deadline, id});
  UpdateNextDeadline();
  return id;
}

std::optional<LeaseTable::Hold> LeaseTable::Release(uint64_t lease_id, const ChunkId& id) {
  absl::MutexLock lock(&mu_);
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return std::nullopt;
  std::vector<Hold>& holds = it->second.holds;
  auto hold = std::find_if(holds.begin(), holds.end(), [&](const Hold& h) { return h.id == id; });
  if (hold == holds.end()) return std::nullopt;
  Hold released = *hold;
  *hold = holds.back();
  holds.pop_back();
  // An emptied lease stays in due_ until its deadline; popping skips it then.
  if (holds.empty()) leases_.erase(it);
  return released;
}

std::vector<LeaseTable::Hold> LeaseTable::TakeExpired(absl::Time now) {
  std::vector<Hold> expired;
  if (absl::ToUnixNanos(now) < next_deadline_ns_.load(std::memory_order_relaxed)) {
    return expired;
  }
  absl::MutexLock lock(&mu_);
  while (!due_.empty() && due_.top().first <= now) {
    auto it = leases_.find(due_.top().second);
    due_.pop();
    if (it == leases_.end()) continue;
    expired.insert(expired.end(), it->second.holds.begin(), it->second.holds.end());
    leases_.erase(it);
  }
  UpdateNextDeadline();
  return expired;
}

size_t LeaseTable::active_leases() const {
  absl::MutexLock lock(&mu_);
  return leases_.size();
}

void LeaseTable::UpdateNextDeadline() {
  const int64_t next = due_.empty() ? INT64_MAX : absl::ToUnixNanos(due_.top().first);
  next_deadline_ns_.store(next, std::memory_order_relaxed);
}

}  // namespace kvstash::storage
