// UcxContext: the daemon's UCP context, and the shared memory it can hand to clients.
//
// The context exists before the chunk store so that the DRAM arena can live in memory UCX
// allocated as shared memory (ucp_mem_map with UCP_MEM_MAP_ALLOCATE; on one host that is
// UCX's `posix` transport). A client on the same host maps that memory through the packed
// remote key the daemon sends on Attach, and then reads and writes chunks in it directly:
// one copy per byte, made by the client, instead of two through UCX's shared-memory queue
// (docs/protocol.md, "Direct access").
//
//   auto ctx = UcxContext::Create(options, log);
//   std::unique_ptr<SharedRegion> arena = (*ctx)->AllocateShared(bytes);  // null: not shareable
//
// Thread-safety: thread-safe (UCX's context is created with multi-threaded workers in
// mind; AllocateShared is called once at start-up).
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/ucx_setup.h"
#include "server/log.h"
#include "storage/chunk_store.h"

namespace kvstash::server::ucx {

struct UcxServerOptions;
class UcxContext;

// Memory mapped with ucp_mem_map, with its packed remote key. Keeps the context alive.
class SharedRegion final : public storage::ArenaMemory {
 public:
  ~SharedRegion() override;
  uint8_t* data() const override { return data_; }
  uint64_t size() const override { return size_; }
  // ucp_rkey_pack's output: what a client needs to map the region.
  const std::string& packed_rkey() const { return rkey_; }

 private:
  friend class UcxContext;
  SharedRegion(std::shared_ptr<UcxContext> context, ucp_mem_h memh, uint8_t* data, uint64_t size,
               std::string rkey);
  const std::shared_ptr<UcxContext> context_;
  const ucp_mem_h memh_;
  uint8_t* const data_;
  const uint64_t size_;
  const std::string rkey_;
};

class UcxContext : public std::enable_shared_from_this<UcxContext> {
 public:
  // Reads UCX's configuration, applies options.tls / rndv_thresh_bytes and the settings
  // every kvstash endpoint needs (ucx_setup::ConfigureUcx), and creates the context.
  static absl::StatusOr<std::shared_ptr<UcxContext>> Create(const UcxServerOptions& options,
                                                            Logger* log);
  ~UcxContext();

  ucp_context_h handle() const { return context_; }
  // The TCP segment UCX uses (as ucx_setup::ConfigureUcx returned it), told to clients.
  uint64_t tcp_segment_bytes() const { return tcp_segment_bytes_; }
  // `bytes` of memory other processes on this host can map, or null (logged) when the
  // transport list has no shared-memory transport or UCX cannot allocate it (e.g.
  // /dev/shm is too small: UCX's posix transport allocates there).
  std::unique_ptr<SharedRegion> AllocateShared(uint64_t bytes);

 private:
  UcxContext(ucp_context_h context, Logger* log, bool shared_memory, uint64_t tcp_segment_bytes)
      : context_(context),
        log_(log),
        shared_memory_(shared_memory),
        tcp_segment_bytes_(tcp_segment_bytes) {}
  const ucp_context_h context_;
  Logger* const log_;
  const bool shared_memory_;  // the transport list includes a shared-memory transport
  const uint64_t tcp_segment_bytes_;
};

}  // namespace kvstash::server::ucx
