#include "client/cluster_leases.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace kvstash::client_internal {

uint64_t LeaseTable::Add(Entry entry, absl::Time expires) {
  absl::MutexLock lock(&mu_);
  if (items_.size() >= purge_at_) {
    const absl::Time now = absl::Now();
    absl::erase_if(items_, [now](const auto& kv) { return kv.second.expires <= now; });
    purge_at_ = std::max<size_t>(64, 2 * items_.size());
  }
  const uint64_t id = next_id_++;
  items_[id] = Item{expires, std::make_shared<const Entry>(std::move(entry))};
  return id;
}

std::shared_ptr<const LeaseTable::Entry> LeaseTable::Find(uint64_t id, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = items_.find(id);
  if (it == items_.end()) return nullptr;
  if (it->second.expires <= now) {
    items_.erase(it);
    return nullptr;
  }
  return it->second.entry;
}

size_t LeaseTable::size() {
  absl::MutexLock lock(&mu_);
  return items_.size();
}

}  // namespace kvstash::client_internal
