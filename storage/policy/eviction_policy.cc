#include "storage/policy/eviction_policy.h"

#include <chrono>

namespace kvstash::storage {

namespace {

// The reading of this thread's outermost PolicyClockBatch; 0 outside any.
thread_local uint64_t batch_nanos = 0;

uint64_t ReadClock() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

uint64_t PolicyClockNanos() { return batch_nanos != 0 ? batch_nanos : ReadClock(); }

PolicyClockBatch::PolicyClockBatch() : outer_(batch_nanos) {
  if (outer_ == 0) batch_nanos = ReadClock();
}

PolicyClockBatch::~PolicyClockBatch() { batch_nanos = outer_; }

}  // namespace kvstash::storage
