// Per-tenant quotas as configured (TenantOptions, ChunkStoreOptions::Tenants), parsed: one parser
// for the store and for the daemon's config check. A library of its own, without the store, so the
// config code can use it.
//
// Thread-safety: plain values and a function of its arguments.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace kvstash::storage {

// Per-tenant byte quotas. A namespace's tenant is set by SetNamespaceTenant; unbound
// namespaces belong to tenant "default" once they put chunks. NVMe-only namespaces not
// bound since the start (left by an earlier run) count against no NVMe quota until bound.
// 0 for a DRAM or NVMe quota: none.
struct TenantOptions {
  // DRAM payload bytes per tenant. A put that would pass it demotes (or drops, without
  // NVMe) the tenant's own coldest chunks first, so one tenant cannot evict another's
  // working set. In-flight puts may pass it briefly.
  uint64_t dram_quota_bytes = 0;
  // NVMe payload bytes per tenant; past it the tenant's own coldest NVMe chunks are
  // evicted (checked whenever a put had to evict from DRAM).
  uint64_t nvme_quota_bytes = 0;
  // Pinned payload bytes per tenant (pinned chunks are never evicted). 0: no pinning.
  // Pins of all tenants together never take more than half of the DRAM budget either.
  uint64_t pin_quota_bytes = 64ull << 20;
  // Quotas of named tenants that differ from the three above:
  // "TENANT:dram=SIZE,nvme=SIZE,pin=SIZE;TENANT:..." (fields left out keep the default;
  // sizes as in the config file, e.g. 2GiB). Empty: every tenant has the defaults.
  std::string overrides;
};

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
absl::StatusOr<TenantQuotaTable> ParseTenantQuotas(const TenantOptions& options);

}  // namespace kvstash::storage
