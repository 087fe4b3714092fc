// RateLimiter: paces a stream of byte transfers to a configured rate (a token bucket that
// holds no burst), e.g. NVMe reads under storage.nvme.read_bytes_per_s, so a slow tier can
// be reproduced on a fast disk and clients' fetch-or-recompute decisions tested on it.
//
// Every Acquire(n) books n bytes behind those already booked and waits until the rate
// allows them: concurrent callers share the rate, and a transfer of n bytes on an idle
// limiter still waits n / rate (no burst, so the observed bandwidth is the configured one).
//
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kvstash::storage {

class RateLimiter {
 public:
  using Clock = std::function<absl::Time()>;
  using Sleep = std::function<void(absl::Duration)>;

  // REQUIRES: bytes_per_s > 0. `clock` and `sleep` default to absl::Now and
  // absl::SleepFor; tests pass fakes.
  explicit RateLimiter(uint64_t bytes_per_s, Clock clock = nullptr, Sleep sleep = nullptr);

  // Books `bytes` and returns how long the caller must wait before transferring them.
  absl::Duration Reserve(uint64_t bytes);
  // Reserve, then sleep for the result.
  void Acquire(uint64_t bytes);

  uint64_t bytes_per_s() const { return bytes_per_s_; }

 private:
  const uint64_t bytes_per_s_;
  const Clock clock_;
  const Sleep sleep_;
  absl::Mutex mu_;
  // When the bytes booked so far will have passed at the configured rate.
  absl::Time booked_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace kvstash::storage
