// The one place that maps policy names to implementations; a new policy adds a line here.
#include "storage/eviction_policy.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "storage/lru_policy.h"

namespace kvstash::storage {

std::vector<std::string> KnownEvictionPolicies() { return {std::string(LruPolicy::kName)}; }

absl::StatusOr<EvictionPolicyPtr> CreateEvictionPolicy(absl::string_view name) {
  if (name == LruPolicy::kName) return std::make_unique<LruPolicy>();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown eviction policy '", name,
                   "' (known: ", absl::StrJoin(KnownEvictionPolicies(), ", "), ")"));
}

}  // namespace kvstash::storage
