// ChunkStoreImpl's hint glue: sessions, pins, tenant quotas, and the admin calls
// (SetNamespaceTenant, Pin, EndSession, ClearNamespace, NamespaceUsages). The eviction
// order that hints give chunks lives in the index (storage/index.h).
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "storage/chunk_store_impl.h"

namespace kvstash::storage {

void ChunkStoreImpl::TouchSession(const Key128& ns, uint64_t session_id) {
  const std::vector<SessionKey> ended = sessions_.Touch({ns, session_id}, Now());
  index().EndSessions(ended);
}

void ChunkStoreImpl::ExpireSessions(absl::Time now) {
  index().EndSessions(sessions_.TakeIdle(now));
}

absl::Status ChunkStoreImpl::MakeTenantRoom(const Key128& ns, uint64_t size) {
  uint64_t excess = quotas_.DramExcess(ns, size);
  if (excess == 0) return absl::OkStatus();
  // Before evicting anything: a put that cannot succeed must not cost the tenant its chunks.
  if (absl::Status s = quotas_.CheckDramRoom(ns, size); !s.ok()) return s;
  ExpireLeases(Now());
  const TenantMatcher tenant = quotas_.MatcherFor(ns);
  while (excess > 0) {
    const uint64_t evicted = dram_.EvictOne(&tenant);
    if (evicted == 0) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "DRAM quota of tenant \"", quotas_.TenantOf(ns), "\" full: no room for ", size,
          " bytes and none of its chunks is evictable (pinned, leased, or being read)"));
    }
    excess -= std::min(excess, evicted);
  }
  return absl::OkStatus();
}

void ChunkStoreImpl::AdmitPin(const ChunkId& id, uint64_t size, PutHints* hints) {
  if (quotas_.TryPin(id.ns, size)) return;
  hints->pin = false;  // stored unpinned
  CounterSnapshot refused;
  refused.pin_quota_refusals = 1;
  index().AddCounters(id.ns, refused);
}

void ChunkStoreImpl::AddSessionCounts(std::vector<std::pair<Key128, CounterSnapshot>>* all) const {
  const absl::flat_hash_map<Key128, uint64_t> sessions = sessions_.CountsByNamespace(Now());
  for (auto& [ns, c] : *all) {
    if (auto it = sessions.find(ns); it != sessions.end()) c.sessions = it->second;
  }
}

void ChunkStoreImpl::SetNamespaceTenant(const Key128& ns, const std::string& tenant) {
  quotas_.Bind(ns, tenant);
}

absl::StatusOr<uint32_t> ChunkStoreImpl::Pin(const Key128& ns, absl::Span<const Key128> keys,
                                             bool pin) {
  uint32_t changed = 0;
  if (!pin) {
    for (const Key128& key : keys) {
      const PinChange c = index().SetPinned({ns, key}, false);
      if (!c.present) break;
      if (!c.changed) continue;
      quotas_.Unpin(ns, c.size_bytes);
      ++changed;
    }
    return changed;
  }
  // The leading present chunks not pinned yet, promoted from NVMe where needed.
  std::vector<std::pair<ChunkId, uint64_t>> wanted;
  uint64_t bytes = 0;
  for (const Key128& key : keys) {
    const ChunkId id{ns, key};
    PinChange d = index().Describe(id);
    if (!d.present && PromoteForPin(id)) d = index().Describe(id);
    if (!d.present) break;
    if (d.pinned) continue;
    wanted.emplace_back(id, d.size_bytes);
    bytes += d.size_bytes;
  }
  if (wanted.empty()) return 0;
  if (!quotas_.TryPin(ns, bytes)) {
    CounterSnapshot refused;
    refused.pin_quota_refusals = wanted.size();
    index().AddCounters(ns, refused);
    return absl::ResourceExhaustedError(absl::StrCat("pin quota of tenant \"", quotas_.TenantOf(ns),
                                                     "\" cannot hold ", bytes, " more bytes (",
                                                     wanted.size(), " chunks)"));
  }
  for (const auto& [id, size] : wanted) {
    const PinChange c = index().SetPinned(id, true);
    if (c.changed) {
      ++changed;
    } else {
      quotas_.Unpin(ns, size);  // deleted or pinned by someone else meanwhile
    }
  }
  return changed;
}

void ChunkStoreImpl::EndSession(const Key128& ns, uint64_t session_id) {
  sessions_.End({ns, session_id});
  // Also when no longer tracked: a put racing the session's end may have joined it late.
  const SessionKey ended{ns, session_id};
  index().EndSessions(absl::MakeConstSpan(&ended, 1));
}

uint64_t ChunkStoreImpl::ClearNamespace(const Key128& ns) {
  // A chunk in several tiers (a DRAM copy of an NVMe chunk) counts once.
  absl::flat_hash_set<ChunkId> cleared;
  for (StorageTier* tier : tiers_) tier->Clear(ns, &cleared);
  return cleared.size();
}

std::vector<NamespaceUsage> ChunkStoreImpl::NamespaceUsages() const {
  absl::flat_hash_map<Key128, NamespaceUsage> by_ns;
  for (const StorageTier* tier : tiers_) tier->AddUsage(&by_ns);
  for (const Key128& ns : quotas_.BoundNamespaces()) by_ns[ns];
  std::vector<NamespaceUsage> out;
  out.reserve(by_ns.size());
  for (auto& [ns, u] : by_ns) {
    u.ns = ns;
    u.tenant = quotas_.BoundTenant(ns);
    out.push_back(std::move(u));
  }
  std::sort(out.begin(), out.end(),
            [](const NamespaceUsage& a, const NamespaceUsage& b) { return a.ns < b.ns; });
  return out;
}

}  // namespace kvstash::storage
