#include "client/circuit_breaker.h"

#include <gtest/gtest.h>

namespace kvstash::client_internal {
namespace {

using State = CircuitBreaker::State;

constexpr absl::Duration kOpen = absl::Milliseconds(100);

TEST(CircuitBreakerTest, OpensAfterConsecutiveFailuresOnly) {
  CircuitBreaker b({.failures = 3, .open_ms = 100});
  const absl::Time t = absl::FromUnixSeconds(1000);
  b.Record(false, t);
  b.Record(false, t);
  b.Record(true, t);  // a success resets the count
  b.Record(false, t);
  b.Record(false, t);
  EXPECT_EQ(b.state(t), State::kClosed);
  EXPECT_TRUE(b.Allow(t));
  b.Record(false, t);
  EXPECT_EQ(b.state(t), State::kOpen);
  EXPECT_FALSE(b.Allow(t));
  EXPECT_FALSE(b.Allow(t + kOpen - absl::Milliseconds(1)));
}

TEST(CircuitBreakerTest, OneProbeAfterOpenPeriodThenClosesOnSuccess) {
  CircuitBreaker b({.failures = 1, .open_ms = 100});
  const absl::Time t = absl::FromUnixSeconds(1000);
  b.Record(false, t);
  EXPECT_EQ(b.state(t + kOpen), State::kHalfOpen);
  EXPECT_TRUE(b.Allow(t + kOpen));   // the probe
  EXPECT_FALSE(b.Allow(t + kOpen));  // only one
  EXPECT_TRUE(b.IsOpen(t + kOpen));
  b.Record(true, t + kOpen);
  EXPECT_EQ(b.state(t + kOpen), State::kClosed);
  EXPECT_TRUE(b.Allow(t + kOpen));
}

TEST(CircuitBreakerTest, FailedProbeReopensForAnotherPeriod) {
  CircuitBreaker b({.failures = 2, .open_ms = 100});
  const absl::Time t = absl::FromUnixSeconds(1000);
  b.Record(false, t);
  b.Record(false, t);
  const absl::Time probe = t + kOpen;
  ASSERT_TRUE(b.Allow(probe));
  b.Record(false, probe);  // one failure while open is enough
  EXPECT_FALSE(b.Allow(probe + kOpen - absl::Milliseconds(1)));
  EXPECT_TRUE(b.Allow(probe + kOpen));
}

TEST(CircuitBreakerTest, LostProbeFreesTheSlotAfterAnotherPeriod) {
  CircuitBreaker b({.failures = 1, .open_ms = 100});
  const absl::Time t = absl::FromUnixSeconds(1000);
  b.Record(false, t);
  ASSERT_TRUE(b.Allow(t + kOpen));  // never reported
  EXPECT_FALSE(b.Allow(t + kOpen + absl::Milliseconds(50)));
  EXPECT_TRUE(b.Allow(t + 2 * kOpen));
}

}  // namespace
}  // namespace kvstash::client_internal
