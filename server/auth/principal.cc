#include "server/auth/principal.h"

namespace kvstash::server::auth {
namespace {

const absl::flat_hash_set<std::string>& TenantsWith(const Principal& p, Access access) {
  switch (access) {
    case Access::kRead:
      return p.read;
    case Access::kWrite:
      return p.write;
    case Access::kAdmin:
      break;
  }
  return p.admin;
}

}  // namespace

bool Principal::May(Access access, absl::string_view tenant) const {
  const absl::flat_hash_set<std::string>& tenants = TenantsWith(*this, access);
  if (tenants.contains(kAnyTenant)) return true;
  return tenants.contains(tenant.empty() ? kDefaultTenant : tenant);
}

bool Principal::MayAll(Access access) const {
  return TenantsWith(*this, access).contains(kAnyTenant);
}

PrincipalPtr OpenPrincipal() {
  // One immutable instance for the life of the process; never destroyed, so shutdown
  // order cannot leave a call holding a dangling principal.
  static const PrincipalPtr* const kOpen = [] {
    auto p = std::make_shared<Principal>();
    p->name = std::string(kOpenPrincipal);
    p->read = {std::string(kAnyTenant)};
    p->write = {std::string(kAnyTenant)};
    p->admin = {std::string(kAnyTenant)};
    p->trusted = true;
    return new PrincipalPtr(std::move(p));
  }();
  return *kOpen;
}

}  // namespace kvstash::server::auth
