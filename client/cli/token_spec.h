// Token lists on the command line: "0-1023", "1,2,3,10-20" (ranges inclusive).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash::cli {

// Most tokens one SPEC may expand to; far beyond any context window, small enough that a
// typo like "0-2000000000" fails instead of allocating gigabytes.
inline constexpr size_t kMaxSpecTokens = size_t{1} << 24;

// Comma-separated items, each a token id or an inclusive range LO-HI (LO <= HI), ids in
// [0, 2^31-1]. Whitespace around items is ignored. INVALID_ARGUMENT names the bad item.
absl::StatusOr<std::vector<int32_t>> ParseTokenSpec(absl::string_view spec);

}  // namespace kvstash::cli
