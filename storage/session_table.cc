#include "storage/session_table.h"

namespace kvstash::storage {

SessionTable::SessionTable(absl::Duration idle_timeout, size_t max_sessions)
    : idle_timeout_(idle_timeout), max_sessions_(max_sessions) {}

std::vector<SessionKey> SessionTable::Touch(const SessionKey& session, absl::Time now) {
  std::vector<SessionKey> ended;
  absl::MutexLock lock(&mu_);
  TakeIdleLocked(now, &ended);
  auto it = sessions_.find(session);
  if (it != sessions_.end()) {
    it->second->last_active = now;
    order_.splice(order_.begin(), order_, it->second);
    return ended;
  }
  if (sessions_.size() >= max_sessions_) {
    ended.push_back(order_.back().key);
    sessions_.erase(order_.back().key);
    order_.pop_back();
  }
  order_.push_front({session, now});
  sessions_[session] = order_.begin();
  return ended;
}

bool SessionTable::IsActive(const SessionKey& session) const {
  absl::MutexLock lock(&mu_);
  return sessions_.contains(session);
}

bool SessionTable::End(const SessionKey& session) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return false;
  order_.erase(it->second);
  sessions_.erase(it);
  return true;
}

std::vector<SessionKey> SessionTable::TakeIdle(absl::Time now) {
  std::vector<SessionKey> ended;
  absl::MutexLock lock(&mu_);
  TakeIdleLocked(now, &ended);
  return ended;
}

void SessionTable::TakeIdleLocked(absl::Time now, std::vector<SessionKey>* out) {
  while (!order_.empty() && now - order_.back().last_active >= idle_timeout_) {
    out->push_back(order_.back().key);
    sessions_.erase(order_.back().key);
    order_.pop_back();
  }
}

absl::flat_hash_map<Key128, uint64_t> SessionTable::CountsByNamespace(absl::Time now) const {
  absl::flat_hash_map<Key128, uint64_t> counts;
  absl::MutexLock lock(&mu_);
  for (const Active& a : order_) {
    if (now - a.last_active >= idle_timeout_) break;  // the rest are idler still
    ++counts[a.key.ns];
  }
  return counts;
}

}  // namespace kvstash::storage
