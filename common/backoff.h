// Exponential backoff with jitter: client calls that failed with UNAVAILABLE, and the
// cluster's background etcd calls (registration, member set).
//
// Thread-safety: BackoffDelayMs is a pure function. Backoff holds its own random state
// and is meant for one call (one thread) at a time.
#pragma once

#include <cstdint>

#include "absl/random/random.h"

namespace kvstash {

struct BackoffPolicy {
  // Delay before the first retry, before jitter.
  int64_t initial_backoff_ms = 20;
  // Cap on the delay before jitter; the doubling stops here.
  int64_t max_backoff_ms = 1000;
};

// Delay before retry number `retry` (0 = the first retry): the nominal delay is
// min(max_backoff_ms, initial_backoff_ms * 2^retry), and jitter `u` in [0, 1) spreads it
// over [nominal / 2, nominal) so clients that failed together do not retry together.
int64_t BackoffDelayMs(const BackoffPolicy& policy, int retry, double u);

// A retry schedule for one call.
class Backoff {
 public:
  explicit Backoff(const BackoffPolicy& policy) : policy_(policy) {}
  // Delay before the next retry; advances the schedule.
  int64_t NextDelayMs();
  int retries() const { return retries_; }
  // Back to the initial delay, after a success.
  void Reset() { retries_ = 0; }

 private:
  BackoffPolicy policy_;
  int retries_ = 0;
  absl::BitGen rng_;
};

}  // namespace kvstash
