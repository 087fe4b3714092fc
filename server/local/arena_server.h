// ArenaServer: serves the local arena socket (proto/local_wire.h, docs/protocol.md "Local
// arena"). A client on the daemon's host that presents a trusted principal's token is
// handed the DRAM arena as a file descriptor; its Gets are answered with where
// each chunk lies in the arena, and the chunks are held (not evicted, freed or reused)
// until the client releases the Get or its connection closes. Its Puts reserve each chunk
// and say where it lies; the client writes it there and Commits, or its connection closes
// and the reservations are dropped. Principals that may not map
// the arena (auth: `trusted`) are refused at Hello, and read through gRPC like everyone
// else.
//
//   auto arena = ArenaServer::Start(path, &env, &metrics, {data, size, fd, offset, id}, {});
//   ...
//   (*arena)->Stop();  // the path is removed, connections closed, their holds dropped
//
// Thread-safety: Start and Stop run on one controlling thread; each connection is served
// on a thread of its own; held_bytes() is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/local_wire.h"
#include "server/local_listener.h"
#include "server/requests.h"

namespace kvstash::server {

struct ArenaConnection;  // arena_connection.h

class ArenaServer {
 public:
  // The arena as clients map it.
  struct Arena {
    const uint8_t* data = nullptr;  // the daemon's view
    uint64_t size = 0;
    int fd = -1;               // read-write descriptor of the file behind it; owned from Start
    uint64_t file_offset = 0;  // where `data` lies in that file
    uint64_t id = 0;           // differs between daemon runs
  };
  struct Options {
    // Connections served at once (a thread each); more are closed at once.
    int max_connections = 256;
    // How long a new connection may take to send its Hello; then it is closed.
    int hello_timeout_ms = 10000;
  };

  // Serves `path` (LocalListener's claim rules). `env` and `metrics` (the "local"
  // transport's) must outlive the server.
  static absl::StatusOr<std::unique_ptr<ArenaServer>> Start(const std::string& path,
                                                            const ServiceEnv* env,
                                                            TransportMetrics* metrics,
                                                            const Arena& arena,
                                                            const Options& options);
  ArenaServer(const ArenaServer&) = delete;
  ArenaServer& operator=(const ArenaServer&) = delete;
  ~ArenaServer();

  // Removes the socket and stops accepting; open connections go on. Idempotent.
  void StopAccepting();
  // Removes the socket, closes every connection (dropping their holds) and waits for their
  // threads. Idempotent.
  void Stop();

  // Bytes of chunks clients hold now (Gets answered, not yet released; Puts reserved, not
  // yet committed).
  uint64_t held_bytes() const { return held_bytes_.load(std::memory_order_relaxed); }

 private:
  using Connection = ArenaConnection;
  ArenaServer(const ServiceEnv* env, TransportMetrics* metrics, const Arena& arena,
              const Options& options);
  void Accept(int fd);
  void Serve(Connection* conn);
  // Handles one message; false ends the connection.
  bool Dispatch(Connection* conn, uint8_t op, uint64_t request_id, absl::string_view body);
  bool Hello(Connection* conn, uint64_t request_id, absl::string_view token);
  bool Get(Connection* conn, uint64_t request_id, absl::string_view body);
  // The Get reply body for an admitted call (its chunks held under `request_id`).
  std::string ServeGet(Connection* conn, uint64_t request_id, ActiveGet& call,
                       absl::string_view records);
  // Item i's answer: where the fetched chunk lies (its runs in `*runs`, the chunk held
  // under `request_id` and charged to the caller), or why it is not read here. `room`:
  // reply bytes left for this item.
  wire::local::ItemReply Answer(Connection* conn, uint64_t request_id, const ActiveGet& call,
                                uint64_t capacity, absl::StatusOr<storage::ChunkRef> fetched,
                                size_t room, std::string* runs);
  void Release(Connection* conn, uint64_t request_id);
  // Takes `size` bytes of the connection's and all connections' budget; false (nothing
  // taken) past either.
  bool Charge(Connection* conn, uint64_t size);
  void Uncharge(Connection* conn, uint64_t size);
  // Put and Commit (arena_put.cc).
  bool Put(Connection* conn, uint64_t request_id, absl::string_view body);
  // The Put reply body for an admitted call whose chunk headers passed the checks.
  std::string ServePut(Connection* conn, uint64_t request_id, const CallAuth& caller,
                       const Key128& ns, absl::Span<const PutChunkHeader> headers,
                       TransportMetrics::Clock::time_point start);
  bool Commit(Connection* conn, uint64_t request_id);
  // Sends a reply frame of `op` for `request_id`, counted; false when the client is gone.
  bool Send(Connection* conn, wire::local::Op op, uint64_t request_id, absl::string_view body);

  const Requests requests_;
  const Arena arena_;
  const Options options_;
  std::unique_ptr<LocalListener> listener_;
  std::atomic<uint64_t> held_bytes_{0};
  absl::Mutex mu_;
  std::list<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kvstash::server
