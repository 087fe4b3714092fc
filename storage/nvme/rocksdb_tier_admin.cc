// RocksDbTier's calls for tenant quotas and admin requests: removing the coldest chunks
// that a predicate accepts, and usage per namespace; and the tier's eviction policy with
// the loading of its index.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "storage/nvme/rocksdb_tier.h"
#include "storage/policy/policies.h"

namespace kvstash::storage {

absl::StatusOr<EvictionPolicyPtr> RocksDbTier::MakePolicy() const {
  return CreateEvictionPolicy(options_.eviction, "nvme.eviction");
}

void RocksDbTier::InstallIndexLocked(std::vector<std::unique_ptr<Entry>> loaded,
                                     EvictionPolicyPtr policy) {
  policy_ = std::move(policy);  // fresh: the old one links entries about to go
  entries_.clear();
  live_bytes_ = 0;
  ns_usage_.clear();
  if (!loaded.empty()) next_sequence_ = std::max(next_sequence_, loaded.back()->sequence + 1);
  for (auto& e : loaded) InsertLocked(std::move(e));
}

absl::Status RocksDbTier::LoadIndex() {
  absl::StatusOr<EvictionPolicyPtr> policy = MakePolicy();
  if (!policy.ok()) return policy.status();
  std::vector<std::unique_ptr<Entry>> loaded;
  std::vector<std::string> drop;
  {
    absl::ReaderMutexLock lock(&db_mu_);
    if (absl::Status s = ScanIndex(&loaded, &drop); !s.ok()) return s;
  }
  {
    absl::MutexLock lock(&mu_);
    counters_.dropped_records = drop.size();
    counters_.recovered_chunks = loaded.size();
    InstallIndexLocked(std::move(loaded), *std::move(policy));
  }
  DropRecords(drop);
  MakeRoom(0);  // the budget may have shrunk since the last run
  return absl::OkStatus();
}

uint64_t RocksDbTier::RemoveColdest(absl::FunctionRef<bool(const ChunkId&)> match,
                                    uint64_t max_bytes, bool as_deletes) {
  if (max_bytes == 0) return 0;
  std::vector<std::pair<ChunkId, uint64_t>> victims;  // id, generation
  {
    absl::MutexLock lock(&mu_);
    uint64_t bytes = 0;
    policy_->VisitColdest([&](const PolicyHook* h) {
      const auto* e = static_cast<const Entry*>(h);
      if (match(e->id)) {
        victims.emplace_back(e->id, e->generation);
        bytes += e->meta.size_bytes;
      }
      return bytes < max_bytes;
    });
  }
  uint64_t removed = 0;
  for (const auto& [id, generation] : victims) {
    if (Remove(id, generation)) ++removed;  // a concurrent delete may have won
  }
  absl::MutexLock lock(&mu_);
  (as_deletes ? counters_.deletes : counters_.evictions) += removed;
  return removed;
}

absl::flat_hash_map<Key128, RocksDbTier::NamespaceUsage> RocksDbTier::NamespaceUsages() const {
  absl::MutexLock lock(&mu_);
  return ns_usage_;
}

}  // namespace kvstash::storage
