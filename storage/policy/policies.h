// The eviction policies by name: the one place that maps a policy's name to its
// implementation (storage/policy/*_policy.h); a new policy adds a line in policies.cc.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/policy/eviction_policy.h"

namespace kvstash::storage {

// Names accepted by CreateEvictionPolicy, e.g. for config validation messages.
std::vector<std::string> KnownEvictionPolicies();
// INVALID_ARGUMENT naming the known policies when `name` is unknown; with `field`, the
// message starts with "<field>: " (the option that named it).
absl::StatusOr<EvictionPolicyPtr> CreateEvictionPolicy(absl::string_view name,
                                                       absl::string_view field = "");

}  // namespace kvstash::storage
