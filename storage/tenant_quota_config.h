// Per-tenant quotas as configured (ChunkStoreOptions::Tenants), parsed: one parser for the
// store and for the daemon's config check. A library of its own, without the store, so the
// config code can use it.
//
// Thread-safety: plain values and a function of its arguments.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "storage/chunk_store.h"

namespace kvstash::storage {

// One tenant's quotas in payload bytes. dram_bytes, nvme_bytes: 0 = none; pin_bytes: 0 = no
// pins.
struct TenantQuota {
  uint64_t dram_bytes = 0;
  uint64_t nvme_bytes = 0;
  uint64_t pin_bytes = 0;
};

// The quotas `options` give every tenant, with its overrides parsed
// ("TENANT:dram=SIZE,nvme=SIZE,pin=SIZE;..."). INVALID_ARGUMENT naming the bad part.
struct TenantQuotaTable {
  TenantQuota defaults;
  absl::flat_hash_map<std::string, TenantQuota> overrides;
};
absl::StatusOr<TenantQuotaTable> ParseTenantQuotas(const ChunkStoreOptions::Tenants& options);

}  // namespace kvstash::storage
