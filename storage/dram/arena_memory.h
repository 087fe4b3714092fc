// What the owner of a store decides about the DRAM arena's memory: memory it supplies
// itself (ArenaMemory) and whether an arena the store maps uses huge pages.
//
// Thread-safety: ArenaMemory's data() and size() are thread-safe.
#pragma once

#include <cstdint>

namespace kvstash::storage {

// Memory the owner of a store supplies for its DRAM arena instead of an anonymous mapping
// (the daemon passes shared memory that clients on the same host map, server/ucx). Its
// pages must be backed by a shared file (tmpfs): the arena gives free pages back with
// MADV_REMOVE. Destroying the object releases the memory.
class ArenaMemory {
 public:
  virtual ~ArenaMemory() = default;
  virtual uint8_t* data() const = 0;
  virtual uint64_t size() const = 0;
};

// Huge pages for an arena the store maps: kAuto tries MAP_HUGETLB, then transparent huge
// pages.
enum class HugePages { kOff, kAuto, kOn };

}  // namespace kvstash::storage
