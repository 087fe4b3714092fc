#include "storage/policy/eviction_policy.h"

#include <chrono>

namespace kvstash::storage {

uint64_t PolicyClockNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace kvstash::storage
