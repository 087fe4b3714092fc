#include "storage/nvme/nvme_options.h"

namespace kvstash::storage {

RocksDbTierOptions NvmeTierOptions(const NvmeOptions& nvme) {
  RocksDbTierOptions tier;
  tier.path = nvme.path;
  tier.capacity_bytes = nvme.capacity_bytes;
  tier.sync_writes = nvme.sync_writes;
  tier.flush_interval_ms = nvme.flush_interval_ms;
  tier.low_priority_background = nvme.low_priority_background;
  tier.eviction = nvme.eviction;
  return tier;
}

}  // namespace kvstash::storage
