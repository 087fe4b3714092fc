// The systems under test. Each owns its server process (started on a free loopback port
// in the run's scratch directory) and opens one connection per client thread.
//
// Thread-safety: a System is driven by the main thread; the Conns it hands out are each
// used by one worker thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/process.h"
#include "bench/workload.h"

namespace kvstash::bench {

class System {
 public:
  virtual ~System() = default;

  virtual const char* name() const = 0;       // "kvstash", "redis", "memcached"
  virtual const char* transport() const = 0;  // "grpc", "tcp"
  // Called before each chunk size is measured, so data of the previous size does not
  // skew the next one: memcached restarts (its slabs, once assigned to one item size,
  // refuse others), Redis flushes, kvstash keeps its data (its tier evicts by itself).
  // Connections opened earlier may be invalid afterwards.
  virtual absl::Status PrepareForSize(size_t chunk_bytes) = 0;
  virtual absl::StatusOr<std::unique_ptr<Conn>> NewConn() = 0;
  // True when storing an existing key again is not a real store (kvstash acknowledges
  // an identical key as already present), so put cells must use a fresh key every time.
  virtual bool NeedsFreshPutKeys() const = 0;
  virtual pid_t server_pid() const = 0;
  // "" while the server runs; otherwise how it ended, for error notes.
  virtual std::string ServerExit() = 0;
};

struct PeerOptions {
  std::string scratch_dir;  // logs go here
  // memcached -m: item memory, MiB.
  uint64_t memcached_memory_mib = 1024;
  // memcached -I: the largest item, MiB; memcached wants -m at least twice this.
  uint64_t memcached_max_item_mib = 64;
  // memcached -t: worker threads.
  int memcached_threads = 4;
  // redis-server --maxmemory with allkeys-lru eviction; 0: no limit (--maxmemory 0).
  uint64_t redis_maxmemory_bytes = 0;
};

// Empty path: redis-server / memcached from PATH. NOT_FOUND when the binary is missing.
absl::StatusOr<std::unique_ptr<System>> StartRedis(const std::string& binary,
                                                   const PeerOptions& options);
absl::StatusOr<std::unique_ptr<System>> StartMemcached(const std::string& binary,
                                                       const PeerOptions& options);

}  // namespace kvstash::bench
