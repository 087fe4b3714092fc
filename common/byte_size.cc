#include "common/byte_size.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kvstash {
namespace {

struct Suffix {
  const char* name;  // lower case
  uint64_t factor;
};
constexpr Suffix kSuffixes[] = {
    {"kib", 1ull << 10},   {"mib", 1ull << 20},      {"gib", 1ull << 30},
    {"tib", 1ull << 40},   {"kb", 1000ull},          {"mb", 1000000ull},
    {"gb", 1000000000ull}, {"tb", 1000000000000ull}, {"b", 1},
};

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text) {
  const absl::string_view t = absl::StripAsciiWhitespace(text);
  size_t digits = 0;
  while (digits < t.size() && absl::ascii_isdigit(t[digits])) ++digits;
  uint64_t number = 0;
  if (digits == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a byte size like 4096, 64KiB or 4GiB, got \"", text, "\""));
  }
  if (!absl::SimpleAtoi(t.substr(0, digits), &number)) {
    return absl::OutOfRangeError(absl::StrCat("byte size \"", text, "\" overflows 64 bits"));
  }
  const std::string suffix =
      absl::AsciiStrToLower(absl::StripLeadingAsciiWhitespace(t.substr(digits)));
  if (suffix.empty()) return number;
  for (const Suffix& s : kSuffixes) {
    if (suffix != s.name) continue;
    if (number > std::numeric_limits<uint64_t>::max() / s.factor) {
      return absl::OutOfRangeError(absl::StrCat("byte size \"", text, "\" overflows 64 bits"));
    }
    return number * s.factor;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown size suffix in \"", text,
                                                 "\" (B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)"));
}

std::string FormatByteSize(uint64_t bytes) {
  static constexpr const char* kNames[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; ++i) {
    const uint64_t factor = 1ull << (10 * (4 - i));
    if (bytes != 0 && bytes % factor == 0) return absl::StrCat(bytes / factor, kNames[i]);
  }
  return absl::StrCat(bytes);
}

}  // namespace kvstash
