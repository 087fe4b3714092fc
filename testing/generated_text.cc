#include "testing/generated_text.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kvstash {
namespace {

bool Updating() {
  const char* v = std::getenv("KVSTASH_UPDATE_GENERATED");
  return v != nullptr && std::string(v) == "1";
}

// "line N: ..." for the first line where `current` and `generated` differ.
std::string FirstDifference(const std::string& current, const std::string& generated) {
  const std::vector<absl::string_view> a = absl::StrSplit(current, '\n');
  const std::vector<absl::string_view> b = absl::StrSplit(generated, '\n');
  for (size_t i = 0;; ++i) {
    const absl::string_view x = i < a.size() ? a[i] : "<end>";
    const absl::string_view y = i < b.size() ? b[i] : "<end>";
    if (x != y) return absl::StrCat("line ", i + 1, " of the part is\n  ", x, "\nnot\n  ", y);
  }
}

}  // namespace

absl::Status CheckGeneratedPart(const std::string& path, absl::string_view after,
                                absl::string_view until, const std::string& generated,
                                absl::string_view regenerate) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const size_t marker = absl::string_view(text).find(after);
  if (marker == std::string::npos) {
    return absl::NotFoundError(absl::StrCat(path, ": no \"", after, "\""));
  }
  const size_t begin = marker + after.size();
  const size_t end = until.empty() ? text.size() : absl::string_view(text).find(until, begin);
  if (end == std::string::npos) {
    return absl::NotFoundError(absl::StrCat(path, ": no \"", until, "\" after \"", after, "\""));
  }
  const std::string current = text.substr(begin, end - begin);
  if (current == generated) return absl::OkStatus();
  if (Updating()) {
    std::ofstream out(path, std::ios::trunc);
    out << text.substr(0, begin) << generated << text.substr(end);
    if (!out.good()) return absl::UnavailableError(absl::StrCat(path, ": cannot write"));
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat(path, " differs from what its generator makes (",
                   FirstDifference(current, generated), "); ", regenerate));
}

}  // namespace kvstash
