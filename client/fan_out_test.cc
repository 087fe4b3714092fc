#include "client/fan_out.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace kvstash::client_internal {
namespace {

TEST(FanOutPoolTest, RunsEveryPartOnceWithOrWithoutWorkers) {
  for (size_t threads : {0, 1, 3}) {
    FanOutPool pool;
    pool.EnsureThreads(threads);
    std::vector<std::atomic<int>> runs(17);
    pool.Run(runs.size(), [&](size_t i) { ++runs[i]; });
    for (const auto& r : runs) EXPECT_EQ(r.load(), 1) << threads;
  }
}

TEST(FanOutPoolTest, NestedFanOutsFromEveryWorkerFinish) {
  FanOutPool pool;
  pool.EnsureThreads(2);
  std::atomic<int> inner{0};
  // Every worker busy in an outer part that fans out again: callers run the parts.
  pool.Run(4, [&](size_t) { pool.Run(5, [&](size_t) { ++inner; }); });
  EXPECT_EQ(inner.load(), 20);
}

TEST(FanOutPoolTest, NeverGrowsPastItsCap) {
  FanOutPool pool;
  pool.EnsureThreads(2);
  pool.EnsureThreads(1);
  EXPECT_EQ(pool.threads(), 2u);
  pool.EnsureThreads(1000);
  EXPECT_EQ(pool.threads(), FanOutPool::kMaxThreads);
}

}  // namespace
}  // namespace kvstash::client_internal
