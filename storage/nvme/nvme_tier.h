// NvmeTier: the RocksDB tier (storage/nvme/rocksdb_tier.h) as a LowerTier, with what it needs
// around it: the demotion queue that writes DRAM's evictions in the background
// (storage/nvme/demoter.h), the cleaner that writes DRAM's cold end ahead of eviction
// (storage/nvme/cleaner.h), NVMe admission, write-through, paced reads, per-tenant NVMe quotas
// and its counters. Configured by NvmeOptions.
//
// Thread-safety: thread-safe (see LowerTier).
#pragma once

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"
#include "storage/lower_tier.h"
#include "storage/nvme/cleaner.h"
#include "storage/nvme/demoter.h"
#include "storage/nvme/nvme_options.h"
#include "storage/nvme/rate_limiter.h"
#include "storage/nvme/rocksdb_tier.h"

namespace kvstash::storage {

class NvmeTier final : public LowerTier {
 public:
  // Opens (or creates) the database at options.path.
  static absl::StatusOr<std::unique_ptr<NvmeTier>> Open(const NvmeOptions& options);
  // Stops the cleaner, writes out queued demotions, then closes the database.
  ~NvmeTier() override;

  void Attach(const TierEnv& env) override;
  Tier kind() const override { return Tier::kNvme; }
  bool blocking() const override { return true; }
  bool Contains(const ChunkId& id) const override;
  void Admit(const EvictedEntry& evicted, ChunkRef chunk) override;
  void Committed(const ChunkId& id, const StoredChunk& chunk) override;
  TierRead Get(const ChunkId& id, bool for_get) override;
  bool Delete(const ChunkId& id) override;
  void Clear(const Key128& ns, absl::flat_hash_set<ChunkId>* cleared) override;
  void DramEvicting() override;
  void AfterEvictions() override;
  void AddUsage(absl::flat_hash_map<Key128, NamespaceUsage>* usage) const override;
  void Report(StoreStats* stats) const override;

 private:
  NvmeTier(const NvmeOptions& options, std::unique_ptr<RocksDbTier> db);
  NvmeAdmission Admission() const { return {static_cast<uint32_t>(options_.admission_min_hits)}; }

  const NvmeOptions options_;
  TierEnv env_;
  // Destroyed in reverse: the cleaner stops, the demoter drains, then the database closes.
  const std::unique_ptr<RocksDbTier> db_;
  std::unique_ptr<Demoter> demoter_;  // set by Attach
  std::unique_ptr<Cleaner> cleaner_;  // set by Attach; null with the cleaner off
  // Paces reads; null unless read_bytes_per_s.
  const std::unique_ptr<RateLimiter> read_limiter_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> write_throughs_{0};
  std::atomic<uint64_t> admission_declined_{0};  // DRAM evictions admission refused
};

}  // namespace kvstash::storage
