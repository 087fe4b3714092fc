#include "common/backoff.h"

#include <algorithm>

namespace kvstash {

int64_t BackoffDelayMs(const BackoffPolicy& policy, int retry, double u) {
  int64_t nominal = std::max<int64_t>(policy.initial_backoff_ms, 1);
  // Doubling past the cap would only risk overflow.
  for (int i = 0; i < retry && nominal < policy.max_backoff_ms; ++i) nominal *= 2;
  nominal = std::min(nominal, std::max<int64_t>(policy.max_backoff_ms, 1));
  u = std::clamp(u, 0.0, 1.0);
  int64_t half = nominal / 2;
  return half + static_cast<int64_t>(static_cast<double>(nominal - half) * u);
}

int64_t Backoff::NextDelayMs() {
  double u = absl::Uniform<double>(rng_, 0.0, 1.0);
  return BackoffDelayMs(policy_, retries_++, u);
}

}  // namespace kvstash
