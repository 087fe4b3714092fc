// CircuitBreaker: stops calls to a cluster member that keeps failing, so its keys turn into
// misses at once instead of each call waiting out a deadline. After `failures` consecutive
// failed calls it opens for `open_ms`; then one call is let through as a probe, whose
// outcome closes it again or reopens it.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kvstash::client_internal {

struct CircuitBreakerOptions {
  // Consecutive failed calls that open the breaker (>= 1).
  int failures = 3;
  // How long it stays open before one probe call is allowed (> 0).
  int64_t open_ms = 2000;
};

class CircuitBreaker {
 public:
  enum class State { kClosed, kOpen, kHalfOpen };

  explicit CircuitBreaker(const CircuitBreakerOptions& options) : options_(options) {}

  // Whether a call may be made now. In the half-open state only one caller at a time gets
  // true (the probe); every true must be followed by Record.
  bool Allow(absl::Time now);
  // The outcome of a call Allow let through: `ok` false for a failure of the member
  // (unreachable, deadline), true when it answered.
  void Record(bool ok, absl::Time now);
  // kOpen: calls are skipped (a probe may be out); kHalfOpen: open, and the next Allow
  // lets a probe through.
  State state(absl::Time now) const;
  bool IsOpen(absl::Time now) const { return state(now) != State::kClosed; }

 private:
  const CircuitBreakerOptions options_;
  mutable absl::Mutex mu_;
  int consecutive_failures_ ABSL_GUARDED_BY(mu_) = 0;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  // While open: when the next probe may go out.
  absl::Time retry_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace kvstash::client_internal
