#include "storage/nvme/rate_limiter.h"

#include <vector>

#include "gtest/gtest.h"

namespace kvstash::storage {
namespace {

// A clock that moves only when told to, and a sleep that records its waits and advances
// that clock by them, so the tests check exact waits and never measure time.
struct FakeTime {
  absl::Time now = absl::UnixEpoch();
  std::vector<absl::Duration> waits;

  RateLimiter Limiter(uint64_t bytes_per_s) {
    return RateLimiter(
        bytes_per_s, [this] { return now; },
        [this](absl::Duration d) {
          waits.push_back(d);
          now += d;
        });
  }
};

TEST(RateLimiterTest, EachTransferWaitsItsShareOfTheRate) {
  FakeTime t;
  RateLimiter limiter = t.Limiter(1000);  // 1000 bytes per second
  EXPECT_EQ(limiter.Reserve(500), absl::Milliseconds(500));
  // Booked behind the first: waits for both.
  EXPECT_EQ(limiter.Reserve(250), absl::Milliseconds(750));
  t.now += absl::Milliseconds(750);
  EXPECT_EQ(limiter.Reserve(1000), absl::Seconds(1));
}

TEST(RateLimiterTest, IdleTimeIsNotSavedUp) {
  FakeTime t;
  RateLimiter limiter = t.Limiter(1000);
  EXPECT_EQ(limiter.Reserve(100), absl::Milliseconds(100));
  t.now += absl::Hours(1);
  EXPECT_EQ(limiter.Reserve(100), absl::Milliseconds(100));
}

TEST(RateLimiterTest, AcquireSleepsForTheBookedTime) {
  FakeTime t;
  RateLimiter limiter = t.Limiter(2 << 20);  // 2 MiB/s
  for (int i = 0; i < 4; ++i) limiter.Acquire(1 << 20);
  // Sequential transfers: each waits its own 0.5 s, and 4 MiB took 2 s of the fake clock.
  ASSERT_EQ(t.waits.size(), 4u);
  for (absl::Duration d : t.waits) EXPECT_EQ(d, absl::Milliseconds(500));
  EXPECT_EQ(t.now - absl::UnixEpoch(), absl::Seconds(2));
  // Nothing to wait for: no sleep.
  limiter.Acquire(0);
  EXPECT_EQ(t.waits.size(), 4u);
}

}  // namespace
}  // namespace kvstash::storage
