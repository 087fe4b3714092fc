// TempDir: a fresh directory for one test or benchmark run (data dirs, logs, ready files),
// removed with everything in it when the TempDir goes away unless Keep() was called (so a
// failed run's logs can be read).
//
//   absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-it");
//   std::string log = (*dir)->Sub("daemon.log");
//
// Thread-safety: not thread-safe; owned by one thread.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash {

class TempDir {
 public:
  // Creates PARENT/PREFIX.XXXXXX (mkdtemp). An empty `parent` means $TMPDIR, or /tmp when
  // that is unset or empty.
  static absl::StatusOr<std::unique_ptr<TempDir>> Create(absl::string_view prefix,
                                                         absl::string_view parent = "");

  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Removes the directory tree unless Keep() was called; errors are ignored.
  ~TempDir();

  const std::string& path() const { return path_; }
  // PATH/name.
  std::string Sub(absl::string_view name) const;
  // Leaves the directory in place when the TempDir is destroyed.
  void Keep() { keep_ = true; }
  bool kept() const { return keep_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}

  std::string path_;
  bool keep_ = false;
};

}  // namespace kvstash
