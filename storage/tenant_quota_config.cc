#include "storage/tenant_quota_config.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/byte_size.h"

namespace kvstash::storage {
namespace {

// One "field=SIZE" of an override into `quota`.
absl::Status ParseQuotaField(absl::string_view field, TenantQuota* quota) {
  std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(field, absl::MaxSplits('=', 1));
  const absl::string_view name = absl::StripAsciiWhitespace(kv.first);
  uint64_t* slot = name == "dram"   ? &quota->dram_bytes
                   : name == "nvme" ? &quota->nvme_bytes
                   : name == "pin"  ? &quota->pin_bytes
                                    : nullptr;
  if (slot == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown quota \"", name, "\" (known: dram, nvme, pin)"));
  }
  absl::StatusOr<uint64_t> size = ParseByteSize(absl::StripAsciiWhitespace(kv.second));
  if (!size.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", size.status().message()));
  }
  *slot = *size;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TenantQuotaTable> ParseTenantQuotas(const TenantOptions& options) {
  TenantQuotaTable table;
  table.defaults = {options.dram_quota_bytes, options.nvme_quota_bytes, options.pin_quota_bytes};
  for (absl::string_view entry : absl::StrSplit(options.overrides, ';', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(entry, absl::MaxSplits(':', 1));
    const std::string tenant(absl::StripAsciiWhitespace(parts.first));
    if (tenant.empty() || absl::StripAsciiWhitespace(parts.second).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tenants.overrides: expected TENANT:dram=SIZE,nvme=SIZE,pin=SIZE, got \"", entry, "\""));
    }
    if (table.overrides.contains(tenant)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tenants.overrides: tenant \"", tenant, "\" appears twice"));
    }
    TenantQuota quota = table.defaults;
    for (absl::string_view field : absl::StrSplit(parts.second, ',')) {
      if (absl::Status s = ParseQuotaField(field, &quota); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tenants.overrides: tenant \"", tenant, "\": ", s.message()));
      }
    }
    table.overrides[tenant] = quota;
  }
  return table;
}

}  // namespace kvstash::storage
