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

namespace {

// Every right on every tenant; one immutable instance per kind for the life of the
// process, never destroyed, so shutdown order cannot leave a call holding a dangling one.
PrincipalPtr* NewAllRights(absl::string_view name, bool trusted) {
  auto p = std::make_shared<Principal>();
  p->name = std::string(name);
  p->read = {std::string(kAnyTenant)};
  p->write = {std::string(kAnyTenant)};
  p->admin = {std::string(kAnyTenant)};
  p->trusted = trusted;
  return new PrincipalPtr(std::move(p));
}

}  // namespace

PrincipalPtr OpenPrincipal() {
  static const PrincipalPtr* const kOpen = NewAllRights(kOpenPrincipal, /*trusted=*/true);
  return *kOpen;
}

PrincipalPtr MigrationPrincipal() {
  static const PrincipalPtr* const kMigration =
      NewAllRights(kAnonymousPrincipal, /*trusted=*/false);
  return *kMigration;
}

}  // namespace kvstash::server::auth
