#include "client/circuit_breaker.h"

namespace kvstash::client_internal {

bool CircuitBreaker::Allow(absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (!open_) return true;
  if (now < retry_at_) return false;
  // This caller is the probe; a probe that never reports back frees the slot after
  // another open_ms, so a lost outcome cannot keep the member shut out for good.
  retry_at_ = now + absl::Milliseconds(options_.open_ms);
  return true;
}

void CircuitBreaker::Record(bool ok, absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (ok) {
    consecutive_failures_ = 0;
    open_ = false;
    return;
  }
  ++consecutive_failures_;
  if (open_ || consecutive_failures_ >= options_.failures) {
    open_ = true;
    retry_at_ = now + absl::Milliseconds(options_.open_ms);
  }
}

CircuitBreaker::State CircuitBreaker::state(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  if (!open_) return State::kClosed;
  return now < retry_at_ ? State::kOpen : State::kHalfOpen;
}

}  // namespace kvstash::client_internal
