#include "storage/tenant_quotas.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvstash::storage {
namespace {

bool AnyQuota(const TenantQuotaTable& t, uint64_t TenantQuota::*field) {
  if (t.defaults.*field != 0) return true;
  return std::any_of(t.overrides.begin(), t.overrides.end(),
                     [field](const auto& o) { return o.second.*field != 0; });
}

}  // namespace

TenantQuotas::TenantQuotas(const TenantOptions& options, uint64_t max_pinned_bytes)
    : quotas_(*ParseTenantQuotas(options)),
      max_pinned_bytes_(max_pinned_bytes),
      any_dram_quota_(AnyQuota(quotas_, &TenantQuota::dram_bytes)),
      any_nvme_quota_(AnyQuota(quotas_, &TenantQuota::nvme_bytes)) {}

const TenantQuota& TenantQuotas::QuotaOf(const std::string& tenant) const {
  auto it = quotas_.overrides.find(tenant);
  return it == quotas_.overrides.end() ? quotas_.defaults : it->second;
}

const std::string& TenantQuotas::TenantOfLocked(const Key128& ns) const {
  auto it = bindings_.find(ns);
  return it == bindings_.end() ? default_tenant_ : it->second;
}

void TenantQuotas::Bind(const Key128& ns, const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  const Usage moved = by_namespace_[ns];
  Usage& from = by_tenant_[TenantOfLocked(ns)];
  from.dram_bytes -= moved.dram_bytes;
  from.pinned_bytes -= moved.pinned_bytes;
  bindings_[ns] = tenant.empty() ? default_tenant_ : tenant;
  Usage& to = by_tenant_[TenantOfLocked(ns)];
  to.dram_bytes += moved.dram_bytes;
  to.pinned_bytes += moved.pinned_bytes;
}

std::string TenantQuotas::BoundTenant(const Key128& ns) const {
  absl::MutexLock lock(&mu_);
  auto it = bindings_.find(ns);
  return it == bindings_.end() ? "" : it->second;
}

std::string TenantQuotas::TenantOf(const Key128& ns) const {
  absl::MutexLock lock(&mu_);
  return TenantOfLocked(ns);
}

std::vector<Key128> TenantQuotas::BoundNamespaces() const {
  absl::MutexLock lock(&mu_);
  std::vector<Key128> out;
  out.reserve(bindings_.size());
  for (const auto& [ns, tenant] : bindings_) out.push_back(ns);
  return out;
}

void TenantQuotas::AddDram(const Key128& ns, int64_t delta) {
  absl::MutexLock lock(&mu_);
  by_namespace_[ns].dram_bytes += static_cast<uint64_t>(delta);  // wraps back for delta < 0
  by_tenant_[TenantOfLocked(ns)].dram_bytes += static_cast<uint64_t>(delta);
}

uint64_t TenantQuotas::DramExcess(const Key128& ns, uint64_t size) const {
  if (!any_dram_quota_) return 0;
  absl::MutexLock lock(&mu_);
  const std::string& tenant = TenantOfLocked(ns);
  const uint64_t quota = QuotaOf(tenant).dram_bytes;
  if (quota == 0) return 0;
  auto it = by_tenant_.find(tenant);
  const uint64_t used = it == by_tenant_.end() ? 0 : it->second.dram_bytes;
  return used + size > quota ? used + size - quota : 0;
}

absl::Status TenantQuotas::CheckDramRoom(const Key128& ns, uint64_t size) const {
  if (!any_dram_quota_) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  const std::string& tenant = TenantOfLocked(ns);
  const uint64_t quota = QuotaOf(tenant).dram_bytes;
  if (quota == 0) return absl::OkStatus();
  auto it = by_tenant_.find(tenant);
  const uint64_t pinned = it == by_tenant_.end() ? 0 : it->second.pinned_bytes;
  if (size <= quota && size <= quota - std::min(quota, pinned)) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("DRAM quota of tenant \"", tenant, "\" (", quota, " bytes, ", pinned,
                   " pinned) cannot hold a chunk of ", size, " bytes"));
}

TenantMatcher TenantQuotas::MatcherLocked(const std::string& tenant) const {
  TenantMatcher m;
  for (const auto& [ns, bound] : bindings_) {
    if (bound == tenant) m.members_.insert(ns);
  }
  if (tenant == default_tenant_) {
    // Known unbound namespaces: they held DRAM bytes or pins in this process.
    for (const auto& [ns, usage] : by_namespace_) {
      if (!bindings_.contains(ns)) m.members_.insert(ns);
    }
  }
  return m;
}

TenantMatcher TenantQuotas::MatcherFor(const Key128& ns) const {
  absl::MutexLock lock(&mu_);
  return MatcherLocked(TenantOfLocked(ns));
}

bool TenantQuotas::TryPin(const Key128& ns, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  const std::string& tenant = TenantOfLocked(ns);
  Usage& usage = by_tenant_[tenant];
  if (usage.pinned_bytes + bytes > QuotaOf(tenant).pin_bytes ||
      pinned_bytes_ + bytes > max_pinned_bytes_) {
    return false;
  }
  usage.pinned_bytes += bytes;
  by_namespace_[ns].pinned_bytes += bytes;
  pinned_bytes_ += bytes;
  return true;
}

void TenantQuotas::Unpin(const Key128& ns, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  by_tenant_[TenantOfLocked(ns)].pinned_bytes -= bytes;
  by_namespace_[ns].pinned_bytes -= bytes;
  pinned_bytes_ -= bytes;
}

std::vector<std::pair<uint64_t, TenantMatcher>> TenantQuotas::NvmeQuotas() const {
  std::vector<std::pair<uint64_t, TenantMatcher>> out;
  if (!any_nvme_quota_) return out;
  absl::MutexLock lock(&mu_);
  absl::flat_hash_set<std::string> tenants = {default_tenant_};
  for (const auto& [ns, tenant] : bindings_) tenants.insert(tenant);
  for (const std::string& tenant : tenants) {
    const uint64_t quota = QuotaOf(tenant).nvme_bytes;
    if (quota != 0) out.emplace_back(quota, MatcherLocked(tenant));
  }
  return out;
}

}  // namespace kvstash::storage
