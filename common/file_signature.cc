#include "common/file_signature.h"

#include <sys/stat.h>

namespace kvstash {

FileSignature FileSignature::Of(const std::string& path) {
  struct stat st {};
  FileSignature sig;
  if (::stat(path.c_str(), &st) != 0) return sig;
  sig.exists = true;
  sig.device = st.st_dev;
  sig.inode = st.st_ino;
  sig.size = st.st_size;
  sig.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  return sig;
}

bool SettledChange::Observe(const FileSignature& now, const FileSignature& loaded) {
  if (now == loaded) {
    pending_.reset();
    return false;
  }
  if (pending_.has_value() && *pending_ == now) {
    pending_.reset();
    return true;
  }
  pending_ = now;
  return false;
}

}  // namespace kvstash
