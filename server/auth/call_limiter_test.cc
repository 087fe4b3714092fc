#include "server/auth/call_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace kvstash::server::auth {
namespace {

class CallLimiterTest : public ::testing::Test {
 protected:
  CallLimiterTest() : limiter_([this] { return now_; }) {}

  static Principal Named(const std::string& name, PrincipalLimits limits) {
    Principal p;
    p.name = name;
    p.limits = limits;
    return p;
  }

  absl::Time now_ = absl::FromUnixSeconds(1'000'000);
  CallLimiter limiter_;
};

TEST_F(CallLimiterTest, UnlimitedPrincipalIsNeverRefusedNorTracked) {
  const Principal p = Named("free", {});
  for (int i = 0; i < 10'000; ++i) {
    absl::StatusOr<CallLimiter::Slot> slot = limiter_.BeginCall(p);
    ASSERT_TRUE(slot.ok()) << slot.status();
    ASSERT_TRUE(limiter_.ChargeBytes(p, uint64_t{1} << 40).ok());
  }
  EXPECT_TRUE(limiter_.Refusals().empty());
}

TEST_F(CallLimiterTest, CallsPerSecondWithOneSecondBurst) {
  PrincipalLimits limits;
  limits.calls_per_s = 3;
  const Principal p = Named("engine", limits);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limiter_.BeginCall(p).ok()) << i;
  absl::StatusOr<CallLimiter::Slot> refused = limiter_.BeginCall(p);
  ASSERT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_EQ(refused.status().message(), "principal engine: over 3 calls/s");

  now_ += absl::Milliseconds(334);  // one call's worth
  EXPECT_TRUE(limiter_.BeginCall(p).ok());
  EXPECT_FALSE(limiter_.BeginCall(p).ok());
  now_ += absl::Seconds(60);  // an idle minute saves up one second's worth only
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter_.BeginCall(p).ok()) << i;
  EXPECT_FALSE(limiter_.BeginCall(p).ok());

  const std::vector<PrincipalRefusals> r = limiter_.Refusals();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].principal, "engine");
  EXPECT_EQ(r[0].calls_per_s, 3u);
  EXPECT_EQ(r[0].concurrent_calls, 0u);
  EXPECT_EQ(r[0].bytes_per_s, 0u);
}

TEST_F(CallLimiterTest, ConcurrentCallsCountUntilTheSlotGoes) {
  PrincipalLimits limits;
  limits.max_concurrent_calls = 2;
  const Principal p = Named("engine", limits);
  absl::StatusOr<CallLimiter::Slot> a = limiter_.BeginCall(p);
  absl::StatusOr<CallLimiter::Slot> b = limiter_.BeginCall(p);
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<CallLimiter::Slot> c = limiter_.BeginCall(p);
  ASSERT_TRUE(absl::IsResourceExhausted(c.status())) << c.status();
  EXPECT_EQ(c.status().message(), "principal engine: over 2 concurrent calls");

  // Moving a slot keeps one call counted; destroying it frees the place.
  CallLimiter::Slot moved = *std::move(a);
  EXPECT_FALSE(limiter_.BeginCall(p).ok());
  { CallLimiter::Slot gone = std::move(moved); }
  absl::StatusOr<CallLimiter::Slot> d = limiter_.BeginCall(p);
  EXPECT_TRUE(d.ok()) << d.status();
  // Assigning over a slot releases what it held.
  *b = CallLimiter::Slot();
  EXPECT_TRUE(limiter_.BeginCall(p).ok());
  EXPECT_EQ(limiter_.Refusals()[0].concurrent_calls, 2u);
}

TEST_F(CallLimiterTest, BytesFollowTheDebtModel) {
  PrincipalLimits limits;
  limits.bytes_per_s = 1000;
  const Principal p = Named("engine", limits);
  // A charge larger than the burst passes on an idle bucket, then the debt is repaid.
  ASSERT_TRUE(limiter_.ChargeBytes(p, 5000).ok());
  absl::Status s = limiter_.ChargeBytes(p, 1);
  ASSERT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_EQ(s.message(), "principal engine: over 1000 bytes/s");
  now_ += absl::Seconds(4);  // level back to exactly 0: still refused
  EXPECT_FALSE(limiter_.ChargeBytes(p, 1).ok());
  now_ += absl::Milliseconds(1);
  EXPECT_TRUE(limiter_.ChargeBytes(p, 1).ok());
  EXPECT_EQ(limiter_.Refusals()[0].bytes_per_s, 2u);
}

TEST_F(CallLimiterTest, StateIsKeptByNameAcrossReloads) {
  PrincipalLimits limits;
  limits.calls_per_s = 1;
  const Principal before = Named("engine", limits);
  ASSERT_TRUE(limiter_.BeginCall(before).ok());
  const Principal after = Named("engine", limits);  // rebuilt by a token file reload
  EXPECT_FALSE(limiter_.BeginCall(after).ok());
  limits.calls_per_s = 5;
  EXPECT_TRUE(limiter_.BeginCall(Named("other", limits)).ok());

  // After an idle spell, a lowered limit caps what was saved up under the old one.
  now_ += absl::Seconds(10);
  limits.calls_per_s = 2;
  const Principal lowered = Named("other", limits);
  EXPECT_TRUE(limiter_.BeginCall(lowered).ok());
  EXPECT_TRUE(limiter_.BeginCall(lowered).ok());
  EXPECT_FALSE(limiter_.BeginCall(lowered).ok());

  const std::vector<PrincipalRefusals> r = limiter_.Refusals();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].principal, "engine");
  EXPECT_EQ(r[1].principal, "other");
}

TEST(CallLimiterThreadsTest, ConcurrencyLimitHoldsUnderThreads) {
  CallLimiter limiter;
  Principal p;
  p.name = "engine";
  p.limits.max_concurrent_calls = 4;
  std::vector<std::thread> threads;
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        absl::StatusOr<CallLimiter::Slot> slot = limiter.BeginCall(p);
        if (!slot.ok()) continue;
        const int now = ++in_flight;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --in_flight;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(most.load(), 4);
  EXPECT_GE(most.load(), 1);
}

}  // namespace
}  // namespace kvstash::server::auth
