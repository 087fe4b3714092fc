#include "server/metrics/bearer_token_file.h"

#include <sys/stat.h>

#include <cerrno>
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
  struct stat st {};
  if (stat(path_.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics.bearer_token_file: ", path_, ": ", std::strerror(errno)));
  }
  const int64_t mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  if (st.st_ino == inode_ && st.st_size == size_ && mtime_ns == mtime_ns_) {
    return absl::OkStatus();
  }
  std::ifstream in(path_, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string token(absl::StripAsciiWhitespace(text.str()));
  if (!in || token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics.bearer_token_file: ", path_, ": cannot read a token from it"));
  }
  token_ = token;
  inode_ = st.st_ino;
  size_ = st.st_size;
  mtime_ns_ = mtime_ns;
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
