#include "server/metrics/bearer_token_file.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kvstash::metrics {

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

absl::StatusOr<std::unique_ptr<BearerTokenFile>> BearerTokenFile::Open(const std::string& path) {
  std::unique_ptr<BearerTokenFile> file(new BearerTokenFile(path));
  absl::MutexLock lock(&file->mu_);
  if (absl::Status s = file->Refresh(); !s.ok()) return s;
  return file;
}

absl::Status BearerTokenFile::Refresh() {
  const FileSignature now = FileSignature::Of(path_);
  if (!now.exists) {
    return absl::InvalidArgumentError(absl::StrCat("metrics.bearer_token_file: ", path_,
                                                   ": missing, or its directory cannot be read"));
  }
  if (now == signature_) return absl::OkStatus();
  std::ifstream in(path_, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string token(absl::StripAsciiWhitespace(text.str()));
  if (!in || token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics.bearer_token_file: ", path_, ": cannot read a token from it"));
  }
  token_ = token;
  signature_ = now;
  return absl::OkStatus();
}

bool BearerTokenFile::Accepts(const char* authorization) {
  if (authorization == nullptr) return false;
  absl::string_view value = absl::StripAsciiWhitespace(authorization);
  constexpr absl::string_view kScheme = "bearer ";
  if (!absl::StartsWithIgnoreCase(value, kScheme)) return false;
  value = absl::StripLeadingAsciiWhitespace(value.substr(kScheme.size()));
  absl::MutexLock lock(&mu_);
  Refresh().IgnoreError();  // an unreadable file keeps the previous token
  return ConstantTimeEquals(value, token_);
}

}  // namespace kvstash::metrics
