// Delays between retries of etcd calls in the cluster's background threads: exponential
// with jitter, so daemons that lost etcd together do not hammer it together when it comes
// back. (client/backoff.h serves the client library, which sits above this one.)
//
// Thread-safety: not thread-safe; one per retrying thread.
#pragma once

#include <algorithm>

#include "absl/random/random.h"
#include "absl/time/time.h"

namespace kvstash::cluster {

class RetryDelay {
 public:
  RetryDelay(absl::Duration initial, absl::Duration max) : initial_(initial), max_(max) {}

  // The next delay, in [nominal / 2, nominal) with nominal = min(max, initial * 2^n).
  absl::Duration Next() {
    absl::Duration nominal = std::min(max_, initial_ * (int64_t{1} << std::min(attempt_, 20)));
    ++attempt_;
    return nominal / 2 + (nominal / 2) * absl::Uniform<double>(rng_, 0.0, 1.0);
  }
  // Back to `initial` after a success.
  void Reset() { attempt_ = 0; }

 private:
  absl::Duration initial_;
  absl::Duration max_;
  int attempt_ = 0;
  absl::BitGen rng_;
};

}  // namespace kvstash::cluster
