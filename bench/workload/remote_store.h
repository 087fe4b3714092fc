// What the engine model calls on a store: a prefix lookup, a fetch of chunks into memory and
// a put of new chunks, each returning the wall time it took. Adapters wrap a kvstash::Client
// (with hints, leases and tiers) or a Redis / memcached connection (bench/peers.h).
//
// Thread-safety: none; one simulation thread drives a store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "bench/workload.h"
#include "kvstash/client.h"
#include "kvstash/hints.h"
#include "kvstash/keys.h"

namespace kvstash::bench::workload {

struct LookupReply {
  uint32_t hits = 0;       // leading keys present
  std::vector<bool> nvme;  // per hit: served from NVMe (kvstash's lower tier)
  uint64_t lease_id = 0;   // kvstash: protects the hits until fetched
  double seconds = 0;
};

struct FetchReply {
  uint32_t fetched = 0;  // leading chunks received whole (a later one was evicted meanwhile)
  double seconds = 0;
};

struct PutChunk {
  Key128 key{};
  PutHints hints;
};

struct PutReply {
  uint32_t stored = 0;
  uint32_t refused = 0;  // chunks the store did not keep (first reason in `first_error`)
  std::string first_error;
  double seconds = 0;
};

class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  // How many leading `keys` the store holds. session_id != 0 names the caller's session.
  virtual absl::StatusOr<LookupReply> Lookup(absl::Span<const Key128> keys,
                                             uint64_t session_id) = 0;
  // Reads `keys` in order, each chunk_bytes long, into the store's scratch memory.
  virtual absl::StatusOr<FetchReply> Fetch(absl::Span<const Key128> keys, uint64_t lease_id) = 0;
  // Writes one chunk_bytes value per chunk.
  virtual absl::StatusOr<PutReply> Put(absl::Span<const PutChunk> chunks) = 0;
};

// kvstash through `client` in namespace `ns`, values of chunk_bytes (hints sent as given),
// fetches of up to max_fetch_chunks in one call. The connection is warmed first (one chunk
// put, got and deleted).
absl::StatusOr<std::unique_ptr<RemoteStore>> NewKvstashStore(std::unique_ptr<Client> client,
                                                             const Namespace& ns,
                                                             size_t chunk_bytes,
                                                             size_t max_fetch_chunks);
// A peer connection (Redis, memcached) of the existing benchmark; hints are not sent.
std::unique_ptr<RemoteStore> NewPeerStore(std::unique_ptr<Conn> conn, size_t chunk_bytes,
                                          size_t max_fetch_chunks);

}  // namespace kvstash::bench::workload
