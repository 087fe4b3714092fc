#include "storage/nvme/rate_limiter.h"

#include <algorithm>
#include <utility>

namespace kvstash::storage {

RateLimiter::RateLimiter(uint64_t bytes_per_s, Clock clock, Sleep sleep)
    : bytes_per_s_(bytes_per_s),
      clock_(clock != nullptr ? std::move(clock) : Clock([] { return absl::Now(); })),
      sleep_(sleep != nullptr ? std::move(sleep)
                              : Sleep([](absl::Duration d) { absl::SleepFor(d); })) {}

absl::Duration RateLimiter::Reserve(uint64_t bytes) {
  const absl::Time now = clock_();
  const absl::Duration cost =
      absl::Seconds(static_cast<double>(bytes) / static_cast<double>(bytes_per_s_));
  absl::MutexLock lock(&mu_);
  // Time the limiter sat idle is not saved up: pacing starts again from now.
  booked_until_ = std::max(booked_until_, now) + cost;
  return booked_until_ - now;
}

void RateLimiter::Acquire(uint64_t bytes) {
  const absl::Duration wait = Reserve(bytes);
  if (wait > absl::ZeroDuration()) sleep_(wait);
}

}  // namespace kvstash::storage
