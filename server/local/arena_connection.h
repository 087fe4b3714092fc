// ArenaConnection: ArenaServer's state of one local arena connection (arena_server.cc,
// arena_put.cc).
//
// Thread-safety: `fd`, `thread` and `done` are set before the connection's thread starts
// or are atomic; the rest belongs to that thread.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "server/requests.h"
#include "storage/chunk.h"

namespace kvstash::server {

struct ArenaConnection {
  // A Put's chunks reserved for the client to write, until its Commit.
  struct Reserved {
    CallAuth caller;  // holds the caller's call slot until the Put ends
    TransportMetrics::Clock::time_point start;
    std::vector<PutChunk> chunks;
  };

  explicit ArenaConnection(int fd) : fd(fd) {}
  ~ArenaConnection() {
    if (thread.joinable()) thread.join();
    close(fd);
  }
  const int fd;
  std::thread thread;
  std::atomic<bool> done{false};
  bool greeted = false;
  std::string token;
  // Get request id -> the chunks answered with their runs, until Release.
  absl::flat_hash_map<uint64_t, std::vector<storage::ChunkRef>> holds;
  // Put request id -> what it reserved, until Commit.
  absl::flat_hash_map<uint64_t, Reserved> reservations;
  uint64_t held = 0;  // bytes of `holds` and `reservations`
};

}  // namespace kvstash::server
