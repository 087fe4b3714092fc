// TenantQuotas: which tenant each namespace belongs to, each tenant's byte quotas
// (ChunkStoreOptions::Tenants), and the DRAM and pinned bytes each tenant holds, so that a
// put can be checked against its tenant's quotas without summing the index.
//
// The store reports every change of a namespace's committed DRAM bytes (AddDram) and takes
// pin quota through TryPin/Unpin; NVMe usage is read from the NVMe tier when needed.
//
// A namespace is known once bound (Bind; "" binds it to the default tenant) or once it
// held DRAM bytes or pins in this process; a known unbound namespace counts as the default
// tenant's. Unknown namespaces match no tenant: after a restart the bindings are empty and
// NVMe holds namespaces of every tenant, so the default tenant's NVMe quota must not take
// them all for its own. Their NVMe chunks are left out of quota enforcement until bound
// (the daemon binds a namespace when it is registered again).
//
// Thread-safety: thread-safe (one mutex; every call is a few hash-map operations, except
// Matcher and NvmeQuotas, which copy the namespace bindings).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "kvstash/keys.h"
#include "storage/tenant_quota_config.h"

namespace kvstash::storage {

// Whether a namespace belongs to one tenant; a snapshot of the bindings when it was made.
// Only known namespaces match (see TenantQuotas): an unknown one belongs to no tenant yet.
class TenantMatcher {
 public:
  bool operator()(const Key128& ns) const { return members_.contains(ns); }

 private:
  friend class TenantQuotas;
  absl::flat_hash_set<Key128> members_;
};

class TenantQuotas {
 public:
  // `max_pinned_bytes` bounds the pins of all tenants together.
  // REQUIRES: ParseTenantQuotas(options) is OK (ChunkStoreOptions::Validate checks it).
  TenantQuotas(const TenantOptions& options, uint64_t max_pinned_bytes);

  // Binds `ns` to `tenant` ("" rebinds it to the default tenant); its bytes move along.
  void Bind(const Key128& ns, const std::string& tenant);
  // The tenant `ns` was bound to, or "" when never bound.
  std::string BoundTenant(const Key128& ns) const;
  // The tenant `ns` counts against: its bound one, else the default tenant.
  std::string TenantOf(const Key128& ns) const;
  // Namespaces bound to a tenant.
  std::vector<Key128> BoundNamespaces() const;

  // `ns` gained (delta > 0) or lost committed DRAM payload bytes.
  void AddDram(const Key128& ns, int64_t delta);
  // Bytes the tenant of `ns` must free before `size` more fit its DRAM quota; 0 when they
  // fit or the tenant has no DRAM quota.
  uint64_t DramExcess(const Key128& ns, uint64_t size) const;
  // RESOURCE_EXHAUSTED when `size` more bytes could never fit the DRAM quota of `ns`'s
  // tenant, whatever it evicted: above the quota, or above what its pins leave of it.
  absl::Status CheckDramRoom(const Key128& ns, uint64_t size) const;
  // The namespaces of `ns`'s tenant.
  TenantMatcher MatcherFor(const Key128& ns) const;

  // Takes `bytes` of the pin quota of `ns`'s tenant (and of the global pin bound); false,
  // taking nothing, when either would be passed.
  bool TryPin(const Key128& ns, uint64_t bytes);
  // Returns pin quota taken by TryPin.
  void Unpin(const Key128& ns, uint64_t bytes);

  // Every tenant with an NVMe quota that may hold chunks (bound tenants and the default
  // one): its quota and its known namespaces.
  std::vector<std::pair<uint64_t, TenantMatcher>> NvmeQuotas() const;
  bool any_nvme_quota() const { return any_nvme_quota_; }

 private:
  struct Usage {
    uint64_t dram_bytes = 0;
    uint64_t pinned_bytes = 0;
  };
  const TenantQuota& QuotaOf(const std::string& tenant) const;
  // The tenant `ns` counts against. REQUIRES: mu_ held.
  const std::string& TenantOfLocked(const Key128& ns) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  TenantMatcher MatcherLocked(const std::string& tenant) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const TenantQuotaTable quotas_;
  const uint64_t max_pinned_bytes_;
  const bool any_dram_quota_;  // else DramExcess is 0 without taking the mutex
  const bool any_nvme_quota_;
  const std::string default_tenant_{kDefaultTenant};
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key128, std::string> bindings_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<Key128, Usage> by_namespace_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Usage> by_tenant_ ABSL_GUARDED_BY(mu_);
  uint64_t pinned_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // all tenants
};

}  // namespace kvstash::storage
