#include "storage/checksummer.h"

#include <atomic>
#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace kvstash::storage {
namespace {

// Counts checksum() calls; the first one blocks until `release` (when set) is notified.
class CountingChunk final : public StoredChunk {
 public:
  explicit CountingChunk(absl::Notification* release = nullptr) : release_(release) {}
  const ChunkMeta& meta() const override { return meta_; }
  uint64_t checksum() const override {
    entered_.store(true);
    if (release_ != nullptr) release_->WaitForNotification();
    return ++calls_;
  }
  bool entered() const { return entered_.load(); }
  absl::Span<const Segment> segments() const override { return {}; }
  int calls() const { return calls_.load(); }

 private:
  ChunkMeta meta_;
  absl::Notification* release_;
  mutable std::atomic<int> calls_{0};
  mutable std::atomic<bool> entered_{false};
};

bool PollUntil(const std::function<bool()>& done) {
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (!done()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

TEST(ChecksummerTest, HashesEveryQueuedChunkOnItsThread) {
  Checksummer summer(Checksummer::Options{});
  std::vector<std::shared_ptr<CountingChunk>> chunks;
  for (int i = 0; i < 50; ++i) {
    chunks.push_back(std::make_shared<CountingChunk>());
    summer.Enqueue(chunks.back());
  }
  EXPECT_TRUE(PollUntil([&] {
    for (const auto& c : chunks) {
      if (c->calls() != 1) return false;
    }
    return true;
  }));
  EXPECT_EQ(summer.dropped(), 0u);
}

TEST(ChecksummerTest, SkipsChunksFreedBeforeTheirTurnAndDropsPastTheQueue) {
  absl::Notification release;
  Checksummer summer(Checksummer::Options{.queue_chunks = 2});
  auto blocker = std::make_shared<CountingChunk>(&release);
  summer.Enqueue(blocker);
  ASSERT_TRUE(PollUntil([&] { return blocker->entered(); }));  // the thread holds it now
  auto gone = std::make_shared<CountingChunk>();
  auto kept = std::make_shared<CountingChunk>();
  auto extra = std::make_shared<CountingChunk>();
  summer.Enqueue(gone);
  summer.Enqueue(kept);
  summer.Enqueue(extra);  // the queue holds two: dropped
  EXPECT_EQ(summer.dropped(), 1u);
  std::weak_ptr<CountingChunk> watch = gone;
  gone.reset();  // evicted before its turn: the queue must not keep it alive
  EXPECT_TRUE(watch.expired());
  release.Notify();
  EXPECT_TRUE(PollUntil([&] { return kept->calls() == 1; }));
  EXPECT_EQ(blocker->calls(), 1);
  EXPECT_EQ(extra->calls(), 0);
}

TEST(ChecksummerTest, StopsWithWorkQueued) {
  absl::Notification release;
  auto blocker = std::make_shared<CountingChunk>(&release);
  auto waiting = std::make_shared<CountingChunk>();
  {
    Checksummer summer(Checksummer::Options{});
    summer.Enqueue(blocker);
    summer.Enqueue(waiting);
    release.Notify();
  }  // joins without hanging
  EXPECT_LE(waiting->calls(), 1);
}

}  // namespace
}  // namespace kvstash::storage
