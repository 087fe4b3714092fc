// Byte sizes as people write them in config files and on command lines: "4096", "64KiB",
// "4 GiB", "5MB". One grammar for the daemon's config, the CLI and the benchmarks.
//
// Thread-safety: functions of their arguments.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash {

// A whole number of bytes with an optional suffix, case-insensitive, white space allowed
// between them: B; binary KiB, MiB, GiB, TiB; decimal KB, MB, GB, TB. INVALID_ARGUMENT
// for anything else (fractions, signs, unknown suffixes), OUT_OF_RANGE past 64 bits.
absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text);

// Bytes with the largest binary suffix that divides them exactly ("4MiB", "1536KiB",
// "100"); ParseByteSize reads it back.
std::string FormatByteSize(uint64_t bytes);

}  // namespace kvstash
