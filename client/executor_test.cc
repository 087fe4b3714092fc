#include "client/executor.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace kvstash::client_internal {
namespace {

TEST(ExecutorTest, PostRunsOnAWorkerThread) {
  Executor executor(2);
  absl::Notification done;
  std::thread::id ran_on;
  executor.Post([&] {
    ran_on = std::this_thread::get_id();
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(ExecutorTest, DestructorRunsEveryPostedTask) {
  std::atomic<int> ran{0};
  {
    Executor executor(1);
    absl::Notification release;
    executor.Post([&] { release.WaitForNotification(); });
    for (int i = 0; i < 100; ++i) executor.Post([&] { ran.fetch_add(1); });
    release.Notify();
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST(ExecutorTest, SubmitResolvesWithTheTaskStatus) {
  Executor executor(1);
  EXPECT_EQ(executor.Submit([] { return absl::NotFoundError("x"); }).get().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvstash::client_internal
