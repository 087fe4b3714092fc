#include "client/cli/token_spec.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kvstash::cli {
namespace {

absl::Status BadItem(absl::string_view item, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("bad token item \"", item, "\": ", why));
}

// Digits only: SimpleAtoi would accept "+5" and " 5", which are no token ids.
bool ParseTokenId(absl::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != s.npos) return false;
  if (!absl::SimpleAtoi(s, out)) return false;
  return *out <= std::numeric_limits<int32_t>::max();
}

// Appends the ids of one item ("7" or "3-9") to `out`.
absl::Status AppendItem(absl::string_view item, std::vector<int32_t>* out) {
  std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(item, '-');
  bool is_range = item.find('-') != absl::string_view::npos;
  if (is_range && item.find('-') != item.rfind('-')) return BadItem(item, "more than one '-'");
  int64_t lo = 0, hi = 0;
  if (!ParseTokenId(absl::StripAsciiWhitespace(parts.first), &lo)) {
    return BadItem(item, "expected a token id 0..2147483647 or a range LO-HI");
  }
  hi = lo;
  if (is_range && !ParseTokenId(absl::StripAsciiWhitespace(parts.second), &hi)) {
    return BadItem(item, "expected a range LO-HI of token ids 0..2147483647");
  }
  if (hi < lo) return BadItem(item, "range runs backwards");
  if (static_cast<uint64_t>(hi - lo) + 1 > kMaxSpecTokens - out->size()) {
    return BadItem(item, absl::StrCat("more than ", kMaxSpecTokens, " tokens in total"));
  }
  for (int64_t t = lo; t <= hi; ++t) out->push_back(static_cast<int32_t>(t));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> ParseTokenSpec(absl::string_view spec) {
  if (absl::StripAsciiWhitespace(spec).empty()) {
    return absl::InvalidArgumentError("empty token list");
  }
  std::vector<int32_t> tokens;
  for (absl::string_view item : absl::StrSplit(spec, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty()) return BadItem(item, "empty item (stray comma?)");
    if (absl::Status s = AppendItem(item, &tokens); !s.ok()) return s;
  }
  return tokens;
}

}  // namespace kvstash::cli
