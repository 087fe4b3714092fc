// LocalArena's mapping of the daemon's arena and its connections (local_arena.cc,
// local_arena_put.cc).
//
// Thread-safety: a Mapping is immutable once built and shared by connections; a Connection
// belongs to one thread at a time (LocalArena's pool hands it out).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <memory>

#include "client/arena_view.h"
#include "client/local_arena.h"

namespace kvstash::client_internal {

struct LocalArena::Mapping {
  ~Mapping() {
    view.reset();
    munmap(map, bytes);
  }
  void* map = nullptr;
  size_t bytes = 0;
  uint64_t id = 0;        // the daemon's arena_id
  bool writable = false;  // mapped for writing too: Puts may use it
  std::unique_ptr<ArenaView> view;
};

struct LocalArena::Connection {
  ~Connection() {
    if (fd >= 0) close(fd);
  }
  int fd = -1;
  std::shared_ptr<Mapping> mapping;  // the arena its Hello handed over
};

}  // namespace kvstash::client_internal
