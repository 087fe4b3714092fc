#include "storage/policy/policies.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "storage/policy/chain_policy.h"
#include "storage/policy/lru_policy.h"
#include "storage/policy/s3fifo_policy.h"
#include "storage/policy/tinylfu_policy.h"

namespace kvstash::storage {

std::vector<std::string> KnownEvictionPolicies() {
  return {std::string(LruPolicy::kName), std::string(S3FifoPolicy::kName),
          std::string(TinyLfuPolicy::kName), std::string(ChainPolicy::kName)};
}

absl::StatusOr<EvictionPolicyPtr> CreateEvictionPolicy(absl::string_view name,
                                                       absl::string_view field) {
  if (name == LruPolicy::kName) return std::make_unique<LruPolicy>();
  if (name == S3FifoPolicy::kName) return std::make_unique<S3FifoPolicy>();
  if (name == TinyLfuPolicy::kName) return std::make_unique<TinyLfuPolicy>();
  if (name == ChainPolicy::kName) return std::make_unique<ChainPolicy>();
  return absl::InvalidArgumentError(
      absl::StrCat(field, field.empty() ? "" : ": ", "unknown eviction policy '", name,
                   "' (known: ", absl::StrJoin(KnownEvictionPolicies(), ", "), ")"));
}

}  // namespace kvstash::storage
