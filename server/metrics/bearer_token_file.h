// BearerTokenFile: the token that /metrics requires (metrics.bearer_token_file), read from
// a file that is checked (stat) on every request and re-read when its inode, size or
// modification time changes, so a rotated token takes effect without a restart. A file
// that becomes unreadable or empty keeps the previous token, so a half-written rotation
// never opens the endpoint.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/file_signature.h"

namespace kvstash::metrics {

class BearerTokenFile {
 public:
  // Reads `path`; its content, surrounding whitespace stripped, is the token.
  // INVALID_ARGUMENT when the file cannot be read or holds no token.
  static absl::StatusOr<std::unique_ptr<BearerTokenFile>> Open(const std::string& path);

  // Whether `authorization` (an Authorization header's value; null when absent) is
  // "Bearer <token>" for the current token. Compares in constant time.
  bool Accepts(const char* authorization);

 private:
  explicit BearerTokenFile(std::string path) : path_(std::move(path)) {}
  // Re-reads the file when it changed. Returns why it could not, keeping the old token.
  absl::Status Refresh() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  // What the file looked like when token_ was read.
  FileSignature signature_ ABSL_GUARDED_BY(mu_);
};

// Equality of `a` and `b` in time that depends on their lengths only.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

}  // namespace kvstash::metrics
