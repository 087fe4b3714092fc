// UcxTransport: Transport over the daemon's UCX data plane (docs/protocol.md, "UCX data
// plane"). Every call, Put/Get/Lookup included, is UCP active messages on one endpoint;
// payloads above UCX's rendezvous threshold move zero-copy where the transport can (RDMA,
// CMA/shared memory on one host), by TCP elsewhere.
//
// One UCP context per transport; a pool of UcxChannels (worker + endpoint), each lent to
// one call at a time and driven by the calling thread, so concurrent calls proceed on
// separate endpoints without locks or thread hand-offs. The pool grows to the peak number
// of concurrent calls. A channel that failed (daemon restarted, deadline) is dropped and
// the call returns UNAVAILABLE or DEADLINE_EXCEEDED; ClientImpl's retry then connects a
// fresh one, which is how the client reconnects after a daemon restart. A background thread
// wakes every ClientOptions::ucx_idle_progress_ms to handle what the daemon sent the idle
// channels (UcxChannel::ProgressIdle).
//
// Thread-safety: thread-safe.
#pragma once

#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "client/message_transport.h"
#include "client/ucx_channel.h"
#include "common/ucx_setup.h"

namespace kvstash::client_internal {

class UcxTransport final : public MessageTransport {
 public:
  // Creates the UCP context (transports from options.ucx_tls, else UCX_TLS) and resolves
  // host:port. UNAVAILABLE / INVALID_ARGUMENT name what failed. Connects lazily.
  static absl::StatusOr<std::unique_ptr<UcxTransport>> Create(const std::string& host, int port,
                                                              const ClientOptions& options);
  ~UcxTransport() override;

  absl::Status WaitConnected(absl::Time deadline) override;
  absl::Status Put(const CallContext& ctx, const Key128& ns, absl::Span<PutItem> items,
                   absl::Span<const uint64_t> checksums) override;
  absl::Status Get(const CallContext& ctx, const Key128& ns, absl::Span<GetItem> items,
                   uint64_t lease_id) override;
  absl::Status RegisterMemory(const void* data, size_t size) override;
  absl::Status UnregisterMemory(const void* data) override;

 protected:
  // Runs a unary method on a pooled channel: serialized request in, serialized reply out.
  absl::StatusOr<std::string> CallUnary(const CallContext& ctx, const UnaryRequest& req) override;

 private:
  struct Region {
    size_t size;
    ucp_mem_h memh;
  };
  UcxTransport(const std::string& address, ucp_context_h context, const ClientOptions& options,
               uint64_t tcp_segment_bytes);
  // A connected channel for one call: an idle one, or a new connection.
  absl::StatusOr<std::unique_ptr<UcxChannel>> Acquire(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // Returns a channel to the pool, or destroys it when broken.
  void Release(std::unique_ptr<UcxChannel> channel) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `fn(channel)` on an acquired channel and releases it; Result: a Status or StatusOr.
  template <typename Result, typename Fn>
  Result WithChannel(absl::Time deadline, Fn fn) ABSL_LOCKS_EXCLUDED(mu_);
  // Destroys `channel` and every idle channel, outside the lock (closing waits on UCX).
  void DropIdle(std::unique_ptr<UcxChannel> channel) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The idle thread: progresses the idle channels every idle_progress_ until stopping_.
  void IdleLoop() ABSL_LOCKS_EXCLUDED(mu_);
  ucp_mem_h FindMemh(const void* data, size_t size) const ABSL_LOCKS_EXCLUDED(mu_);

  const std::string address_;  // "host:port", for messages
  ucp_context_h context_;
  const bool direct_;                   // ClientOptions::ucx_direct
  const std::string token_;             // ClientOptions::EffectiveToken(), for each Hello
  const uint64_t tcp_segment_bytes_;    // as ucx_setup::ConfigureUcx returned it
  const absl::Duration idle_progress_;  // ClientOptions::ucx_idle_progress_ms
  ParallelCopier copier_;               // direct-access copies of every channel
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  const MemhLookup memh_lookup_;

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<UcxChannel>> idle_ ABSL_GUARDED_BY(mu_);
  std::map<uintptr_t, Region> regions_ ABSL_GUARDED_BY(mu_);  // by start address
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread idle_thread_;  // not started when idle_progress_ is zero
};

}  // namespace kvstash::client_internal
