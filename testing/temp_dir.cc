#include "testing/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kvstash {

absl::StatusOr<std::unique_ptr<TempDir>> TempDir::Create(absl::string_view prefix,
                                                         absl::string_view parent) {
  std::string base(parent);
  if (base.empty()) {
    const char* tmp = getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::string templ = absl::StrCat(base, "/", prefix, ".XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", templ, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<TempDir>(new TempDir(std::move(templ)));
}

TempDir::~TempDir() {
  if (keep_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::Sub(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

}  // namespace kvstash
