#include "testing/procfs.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace kvstash {
namespace {

TEST(ProcfsTest, ParsesTheAggregateCpuLine) {
  const char* stat =
      "cpu  100 5 50 800 10 1 2 30 7 0\n"
      "cpu0 50 2 25 400 5 0 1 15 0 0\n"
      "intr 12345\n";
  absl::StatusOr<HostCpuTimes> t = ParseHostCpuTimes(stat);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->total, 100u + 5 + 50 + 800 + 10 + 1 + 2 + 30);  // guest time not again
  EXPECT_EQ(t->steal, 30u);
}

TEST(ProcfsTest, RejectsMissingOrShortCpuLines) {
  EXPECT_FALSE(ParseHostCpuTimes("cpu0 1 2 3 4 5 6 7 8\n").ok());
  EXPECT_FALSE(ParseHostCpuTimes("cpu  1 2 3 4 5\n").ok());  // kernels before steal
  EXPECT_FALSE(ParseHostCpuTimes("cpu  1 2 3 x 5 6 7 8\n").ok());
}

TEST(ProcfsTest, StolenFractionOfAnInterval) {
  EXPECT_DOUBLE_EQ(StolenFraction({1000, 10}, {2000, 260}), 0.25);
  EXPECT_DOUBLE_EQ(StolenFraction({1000, 10}, {1000, 10}), 0);  // no time passed
  absl::StatusOr<HostCpuTimes> now = ReadHostCpuTimes();
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_GT(now->total, 0u);
  EXPECT_LE(now->steal, now->total);
}

TEST(ProcfsTest, CpuTimeOfThisProcessGrows) {
  absl::StatusOr<absl::Duration> before = ReadProcCpuTime(getpid());
  ASSERT_TRUE(before.ok()) << before.status();
  // Spins until the kernel has charged a clock tick more (at most 10 s, however loaded).
  absl::StatusOr<absl::Duration> after = before;
  for (absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end && *after == *before;) {
    after = ReadProcCpuTime(getpid());
    ASSERT_TRUE(after.ok()) << after.status();
  }
  EXPECT_GT(*after, *before);
  EXPECT_FALSE(ReadProcCpuTime(-1).ok());
}

}  // namespace
}  // namespace kvstash
