// DeliveryGate: while the daemon drains, holds the end of a gRPC call until the client's
// kernel has acknowledged every byte sent on the call's connection.
//
// Why: after Shutdown's GOAWAY, gRPC closes a connection (shutdown(SHUT_RDWR), then close)
// as soon as its last call has handed the final bytes to the kernel. When the client is
// slow to read, part of a large Get is then still in the daemon's send queue; the next
// flow-control frame the client sends makes the closed socket answer with a TCP reset, and
// the reset discards the unsent tail: the client sees a truncated stream and an error. A
// call ended only once the send queue is empty and the client advertises room for the
// trailers leaves nothing for a reset to discard (a reset never drops bytes the client's
// kernel already holds).
//
//   gate.Arm(port, release_by);                        // when draining starts
//   gate.Await(context->peer(), [this] { Finish(Status::OK); });
//
// Calls on a Unix socket, or whose connection is gone, are released at once; every call is
// released by the deadline at the latest.
//
// Thread-safety: thread-safe. `release` runs inline in Await (gate not armed, nothing to
// wait for) or on the gate's thread; the destructor releases whatever is still held.
#pragma once

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kvstash::server {

class DeliveryGate {
 public:
  struct Options {
    // How often held calls' connections are checked.
    absl::Duration poll_interval = absl::Milliseconds(1);
    // Receive window the client must advertise before its call ends: room for the trailers
    // (a few hundred bytes) and then some, so they are delivered at once, not queued.
    uint32_t min_peer_window_bytes = 4 << 10;
  };

  explicit DeliveryGate(Options options) : options_(options) {}
  DeliveryGate() : DeliveryGate(Options()) {}
  ~DeliveryGate();
  DeliveryGate(const DeliveryGate&) = delete;
  DeliveryGate& operator=(const DeliveryGate&) = delete;

  // From now on, Await holds calls whose connection to the TCP listener on `port` still
  // has unacknowledged bytes, until `deadline`. `port` 0 (a Unix socket) holds nothing.
  void Arm(int port, absl::Time deadline);

  // Runs `release` once the connection of `peer` (gRPC's peer string, "ipv4:a.b.c.d:p")
  // has delivered everything, or at the deadline.
  void Await(absl::string_view peer, absl::AnyInvocable<void() &&> release);

  // True when every connection of the armed listener has delivered everything (or the gate
  // is not armed, or the listener is a Unix socket).
  bool AllDelivered() const;

 private:
  struct Held {
    std::string peer;
    absl::AnyInvocable<void() &&> release;
  };
  void Loop();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !held_.empty();
  }
  // Takes out of held_ the calls whose connection has delivered (or is gone); all of them
  // past the deadline or when stopping.
  std::vector<Held> TakeReleased() ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  bool armed_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int port_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time deadline_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::vector<Held> held_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // started by Arm
};

}  // namespace kvstash::server
