#include "common/backoff.h"

#include <gtest/gtest.h>

namespace kvstash {
namespace {

TEST(BackoffTest, DoublesFromInitialUpToCap) {
  BackoffPolicy p{20, 1000};
  // u close to 1 gives (almost) the nominal delay.
  EXPECT_EQ(BackoffDelayMs(p, 0, 1.0), 20);
  EXPECT_EQ(BackoffDelayMs(p, 1, 1.0), 40);
  EXPECT_EQ(BackoffDelayMs(p, 2, 1.0), 80);
  EXPECT_EQ(BackoffDelayMs(p, 5, 1.0), 640);
  EXPECT_EQ(BackoffDelayMs(p, 6, 1.0), 1000);
  EXPECT_EQ(BackoffDelayMs(p, 60, 1.0), 1000);  // no overflow far past the cap
}

TEST(BackoffTest, JitterSpansUpperHalf) {
  BackoffPolicy p{100, 100000};
  EXPECT_EQ(BackoffDelayMs(p, 0, 0.0), 50);
  EXPECT_EQ(BackoffDelayMs(p, 0, 0.5), 75);
  EXPECT_EQ(BackoffDelayMs(p, 3, 0.0), 400);
  EXPECT_EQ(BackoffDelayMs(p, 3, 0.999), 799);
}

TEST(BackoffTest, DegeneratePoliciesStayPositive) {
  EXPECT_EQ(BackoffDelayMs(BackoffPolicy{0, 0}, 0, 1.0), 1);
  EXPECT_EQ(BackoffDelayMs(BackoffPolicy{1, 1}, 10, 1.0), 1);
  EXPECT_GE(BackoffDelayMs(BackoffPolicy{1, 1}, 10, 0.0), 0);
}

TEST(BackoffTest, ScheduleAdvancesAndStaysInBounds) {
  Backoff b(BackoffPolicy{10, 80});
  int64_t nominal[] = {10, 20, 40, 80, 80, 80};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(b.retries(), i);
    int64_t d = b.NextDelayMs();
    EXPECT_GE(d, nominal[i] / 2) << "retry " << i;
    EXPECT_LE(d, nominal[i]) << "retry " << i;
  }
  EXPECT_EQ(b.retries(), 6);
}

}  // namespace
}  // namespace kvstash
