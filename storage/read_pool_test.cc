#include "storage/read_pool.h"

#include <atomic>
#include <memory>
#include <thread>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace kvstash::storage {
namespace {

TEST(ReadPoolTest, TasksRunConcurrentlyUpToTheThreadCount) {
  constexpr int kThreads = 4;
  ReadPool pool(kThreads);
  std::atomic<int> arrived{0};
  absl::Notification all_in;
  absl::BlockingCounter finished(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    pool.Schedule([&] {
      // Each task blocks until every other one started: only possible on kThreads threads.
      if (arrived.fetch_add(1) + 1 == kThreads) all_in.Notify();
      all_in.WaitForNotificationWithTimeout(absl::Seconds(10));
      finished.DecrementCount();
    });
  }
  finished.Wait();
  EXPECT_TRUE(all_in.HasBeenNotified());
}

TEST(ReadPoolTest, DestructionRunsWhatIsStillQueued) {
  std::atomic<int> ran{0};
  absl::Notification release;
  // Releases the first task only once the pool is being destroyed with ten tasks queued.
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(50));
    release.Notify();
  });
  {
    ReadPool pool(1);
    pool.Schedule([&] {
      release.WaitForNotification();
      ++ran;
    });
    for (int i = 0; i < 10; ++i) pool.Schedule([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 11);
  releaser.join();
}

TEST(ReadPoolTest, TasksMayOwnMoveOnlyState) {
  ReadPool pool(2);
  absl::Notification done;
  auto value = std::make_unique<int>(7);
  int seen = 0;
  pool.Schedule([v = std::move(value), &seen, &done] {
    seen = *v;
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_EQ(seen, 7);
}

}  // namespace
}  // namespace kvstash::storage
