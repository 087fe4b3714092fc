#include "common/mapped_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kvstash {
namespace {

// One line of /proc/self/maps.
struct Mapping {
  uint64_t start = 0;
  uint64_t offset = 0;
  unsigned major = 0;
  unsigned minor = 0;
  uint64_t inode = 0;
  bool shared = false;
  std::string path;
};

bool FindMapping(uint64_t addr, Mapping* out) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0;
    char perms[5] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
                    &start, &end, perms, &out->offset, &out->major, &out->minor, &out->inode,
                    &path_at) < 7 ||
        addr < start || addr >= end) {
      continue;
    }
    out->start = start;
    out->shared = perms[3] == 's';
    out->path = path_at > 0 ? line.substr(static_cast<size_t>(path_at)) : "";
    return true;
  }
  return false;
}

bool SameFile(const struct stat& st, const Mapping& m) {
  return st.st_ino == m.inode && major(st.st_dev) == m.major && minor(st.st_dev) == m.minor;
}

// A descriptor of this process on the mapped file, reopened with `flags`; -1 if none.
int ReopenHeldDescriptor(const Mapping& m, int flags) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string link = absl::StrCat("/proc/self/fd/", e->d_name);
    struct stat st {};
    if (stat(link.c_str(), &st) == 0 && SameFile(st, m)) {
      found = open(link.c_str(), flags | O_CLOEXEC);
      if (found >= 0) break;
    }
  }
  closedir(dir);
  return found;
}

}  // namespace

absl::StatusOr<MappedFile> ReopenMappedFile(const void* addr, int flags) {
  const uint64_t a = reinterpret_cast<uint64_t>(addr);
  Mapping m;
  if (!FindMapping(a, &m)) {
    return absl::FailedPreconditionError("the address is not mapped");
  }
  if (m.inode == 0 || !m.shared) {
    return absl::FailedPreconditionError(
        "the memory is not a shared mapping of a file (anonymous or private memory)");
  }
  if (absl::StartsWith(m.path, "/SYSV")) {
    return absl::FailedPreconditionError("the memory is a System V segment, not a file");
  }
  int fd = ReopenHeldDescriptor(m, flags);
  if (fd < 0 && !absl::EndsWith(m.path, " (deleted)") && !m.path.empty()) {
    fd = open(m.path.c_str(), flags | O_CLOEXEC);
    struct stat st {};
    if (fd >= 0 && (fstat(fd, &st) != 0 || !SameFile(st, m))) {
      close(fd);
      fd = -1;
    }
  }
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open the file mapped there (", m.path, ")"));
  }
  return MappedFile{fd, m.offset + (a - m.start)};
}

}  // namespace kvstash
