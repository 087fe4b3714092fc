// The file behind a shared mapping of this process, so that the daemon can hand its DRAM
// arena (shared memory some allocator mapped, e.g. UCX's `posix` transport) to another
// process as a descriptor.
//
// Thread-safety: functions of the process's mappings and descriptors.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace kvstash {

struct MappedFile {
  int fd = -1;          // opened anew with the flags asked for; the caller closes it
  uint64_t offset = 0;  // where the mapped address lies in the file
};

// Opens the file that the shared mapping holding `addr` maps, with `flags` (O_RDONLY: a
// descriptor that can only be mapped for reading), through the descriptor this process
// holds on it or, failing that, its path. FAILED_PRECONDITION for memory no file backs
// (anonymous, private or System V memory), NOT_FOUND when the file cannot be reached.
absl::StatusOr<MappedFile> ReopenMappedFile(const void* addr, int flags);

}  // namespace kvstash
