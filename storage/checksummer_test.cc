#include "storage/checksummer.h"

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::MakeId;

// Counts checksum() calls; each blocks until `release` (when set) is notified.
class CountingChunk final : public StoredChunk {
 public:
  explicit CountingChunk(absl::Notification* release = nullptr) : release_(release) {}
  const ChunkMeta& meta() const override { return meta_; }
  uint64_t checksum() const override {
    entered_.store(true);
    if (release_ != nullptr) release_->WaitForNotification();
    return ++calls_;
  }
  uint64_t BackgroundChecksum(size_t piece_bytes) const override {
    piece_bytes_.store(piece_bytes);
    return checksum();
  }
  absl::Span<const Segment> segments() const override { return {}; }
  int calls() const { return calls_.load(); }
  size_t piece_bytes() const { return piece_bytes_.load(); }
  bool entered() const { return entered_.load(); }

 private:
  ChunkMeta meta_;
  absl::Notification* release_;
  mutable std::atomic<int> calls_{0};
  mutable std::atomic<bool> entered_{false};
  mutable std::atomic<size_t> piece_bytes_{0};
};

// Stands in for the index: ids to chunks.
class FakeIndex {
 public:
  std::shared_ptr<CountingChunk> Add(uint64_t n, absl::Notification* release = nullptr) {
    auto c = std::make_shared<CountingChunk>(release);
    absl::MutexLock lock(&mu_);
    chunks_[n] = c;
    return c;
  }
  void Remove(uint64_t n) {
    absl::MutexLock lock(&mu_);
    chunks_.erase(n);
  }
  std::function<ChunkRef(const ChunkId&)> Lookup() {
    return [this](const ChunkId& id) -> ChunkRef {
      absl::MutexLock lock(&mu_);
      for (const auto& [n, c] : chunks_) {
        if (MakeId(n) == id) return c;
      }
      return nullptr;
    };
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<CountingChunk>> chunks_;
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
  FakeIndex index;
  Checksummer summer(Checksummer::Options{}, index.Lookup());
  std::vector<std::shared_ptr<CountingChunk>> chunks;
  for (int i = 0; i < 50; ++i) {
    chunks.push_back(index.Add(i));
    summer.Enqueue(MakeId(i));
  }
  EXPECT_TRUE(PollUntil([&] {
    for (const auto& c : chunks) {
      if (c->calls() != 1) return false;
    }
    return true;
  }));
  EXPECT_EQ(summer.dropped(), 0u);
}

TEST(ChecksummerTest, HashesInPiecesOfTheConfiguredSize) {
  FakeIndex index;
  Checksummer summer(Checksummer::Options{.yield_every_bytes = 4096}, index.Lookup());
  auto chunk = index.Add(1);
  summer.Enqueue(MakeId(1));
  EXPECT_TRUE(PollUntil([&] { return chunk->calls() == 1; }));
  EXPECT_EQ(chunk->piece_bytes(), 4096u);
}

TEST(ChecksummerTest, SkipsChunksGoneBeforeTheirTurnAndDropsPastTheQueue) {
  absl::Notification release;
  FakeIndex index;
  Checksummer summer(Checksummer::Options{.queue_chunks = 2}, index.Lookup());
  auto blocker = index.Add(0, &release);
  summer.Enqueue(MakeId(0));
  bool entered = PollUntil([&] { return blocker->entered(); });  // the thread holds it now
  auto gone = index.Add(1);
  auto kept = index.Add(2);
  auto extra = index.Add(3);
  summer.Enqueue(MakeId(1));
  summer.Enqueue(MakeId(2));
  summer.Enqueue(MakeId(3));  // the queue holds two: dropped
  index.Remove(1);            // evicted before its turn
  release.Notify();           // before any assertion can return early (the join waits)
  ASSERT_TRUE(entered);
  EXPECT_EQ(summer.dropped(), 1u);
  EXPECT_TRUE(PollUntil([&] { return kept->calls() == 1; }));
  EXPECT_EQ(blocker->calls(), 1);
  EXPECT_EQ(gone->calls(), 0);
  EXPECT_EQ(extra->calls(), 0);
}

TEST(ChecksummerTest, StopsWithWorkQueued) {
  absl::Notification release;
  FakeIndex index;
  auto blocker = index.Add(0, &release);
  auto waiting = index.Add(1);
  {
    Checksummer summer(Checksummer::Options{}, index.Lookup());
    summer.Enqueue(MakeId(0));
    summer.Enqueue(MakeId(1));
    release.Notify();
  }  // joins without hanging
  EXPECT_LE(waiting->calls(), 1);
}

}  // namespace
}  // namespace kvstash::storage
