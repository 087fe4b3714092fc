// Principal: who a call comes from once its token is checked, and what that caller may do:
// read, write or administer the chunks of named tenants, map the DRAM arena (trusted), at
// most so many calls and bytes per second. docs/security.md is the model.
//
// Thread-safety: immutable once built; shared between threads through shared_ptr<const>.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "common/bearer_token.h"

namespace kvstash::server::auth {

// The right a call needs on the tenant of the namespace it names.
enum class Access : uint8_t {
  kRead,   // Lookup, Exists, Get; seeing a namespace in ListNamespaces or Stats
  kWrite,  // RegisterNamespace, Put, Delete
  kAdmin,  // ClearNamespace, Pin, EndSession
};

// Tenant name that stands for every tenant in a right's list.
inline constexpr absl::string_view kAnyTenant = "*";
// Tenant of a namespace registered with an empty tenant field.
inline constexpr absl::string_view kDefaultTenant = "default";
// Principal names the token file may not use (common/bearer_token.h): callers without a
// token, and every caller when no token file is configured (OpenPrincipal()).
inline constexpr absl::string_view kAnonymousPrincipal = kAnonymousPrincipalName;
inline constexpr absl::string_view kOpenPrincipal = kOpenPrincipalName;

// Per-principal limits; 0 means unlimited.
struct PrincipalLimits {
  double calls_per_s = 0;             // calls started per second (burst: one second's worth)
  double bytes_per_s = 0;             // Put + Get payload bytes per second (burst: one second's)
  uint32_t max_concurrent_calls = 0;  // calls in flight at once
};

struct Principal {
  std::string name;  // as in the token file; "anonymous" for callers without a token
  absl::flat_hash_set<std::string> read;   // tenants; kAnyTenant = all
  absl::flat_hash_set<std::string> write;  // tenants; kAnyTenant = all
  absl::flat_hash_set<std::string> admin;  // tenants; kAnyTenant = all
  bool trusted = false;                    // may use direct access (map the daemon's DRAM arena)
  PrincipalLimits limits;

  // True when this principal holds `access` on `tenant` (empty tenant = kDefaultTenant).
  // Write and admin do not imply read; each right is listed on its own.
  bool May(Access access, absl::string_view tenant) const;
  // True when `access` covers every tenant (kAnyTenant listed): store-wide Stats and
  // ListNamespaces unfiltered need it.
  bool MayAll(Access access) const;
};

using PrincipalPtr = std::shared_ptr<const Principal>;

// The principal of every call when no token file is configured: every right, trusted,
// unlimited (the open behaviour, logged loudly at start).
PrincipalPtr OpenPrincipal();
// The principal of a call without a token when a token file without an `anonymous`
// section is configured and tokens are not required (migration): every right, but not
// trusted, since direct access always needs a token. Named kAnonymousPrincipal.
PrincipalPtr MigrationPrincipal();

}  // namespace kvstash::server::auth
