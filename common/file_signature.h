// FileSignature: what stat says about a file, enough to notice that it changed (an editor's
// rename gives a new inode, an in-place write a new size or modification time), for the
// daemon's files that are re-read while it runs (token file, /metrics token).
// SettledChange: when a polled file that changed has stopped changing.
//
// Thread-safety: FileSignature is a value; SettledChange is not thread-safe (one poller).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace kvstash {

struct FileSignature {
  // False when stat failed (missing, unreadable directory): a missing file is its own
  // signature.
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;

  static FileSignature Of(const std::string& path);
  bool operator==(const FileSignature& o) const {
    return exists == o.exists && device == o.device && inode == o.inode && size == o.size &&
           mtime_ns == o.mtime_ns;
  }
  bool operator!=(const FileSignature& o) const { return !(*this == o); }
};

// A change is reported once two consecutive polls see the same new signature, so a file
// that is still being written in place (not renamed into place) is not read half-written;
// the price is one poll interval of delay.
class SettledChange {
 public:
  // `now`: the file at this poll; `loaded`: the file when it was last read. True: read it.
  bool Observe(const FileSignature& now, const FileSignature& loaded);

 private:
  // The changed signature the previous poll saw, waiting to be seen again.
  std::optional<FileSignature> pending_;
};

}  // namespace kvstash
