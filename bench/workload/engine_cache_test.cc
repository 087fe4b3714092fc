#include "bench/workload/engine_cache.h"

#include <vector>

#include "gtest/gtest.h"

namespace kvstash::bench::workload {
namespace {

Key128 K(uint8_t i) {
  Key128 k{};
  k[0] = i;
  return k;
}

std::vector<Key128> Keys(std::initializer_list<uint8_t> ids) {
  std::vector<Key128> keys;
  for (uint8_t i : ids) keys.push_back(K(i));
  return keys;
}

TEST(EngineCacheTest, MatchesOnlyTheLeadingRun) {
  EngineCache cache(10);
  cache.Insert(Keys({1, 2, 4}));
  EXPECT_EQ(cache.MatchPrefix(Keys({1, 2, 3, 4})), 2u);
  EXPECT_EQ(cache.MatchPrefix(Keys({3, 1})), 0u);
  EXPECT_EQ(cache.MatchPrefix(Keys({1, 2, 4})), 3u);
}

TEST(EngineCacheTest, EvictsLeastRecentlyUsedTailFirst) {
  EngineCache cache(3);
  cache.Insert(Keys({1, 2, 3}));  // 3 is the oldest: a prompt's tail goes first
  cache.Insert(Keys({9}));
  EXPECT_FALSE(cache.Contains(K(3)));
  EXPECT_TRUE(cache.Contains(K(1)));
  EXPECT_EQ(cache.evictions(), 1u);
  EXPECT_EQ(cache.size(), 3u);
}

TEST(EngineCacheTest, MatchRefreshesHits) {
  EngineCache cache(3);
  cache.Insert(Keys({1, 2}));
  cache.Insert(Keys({3}));
  EXPECT_EQ(cache.MatchPrefix(Keys({1, 2})), 2u);  // 3 is now the oldest
  cache.Insert(Keys({4}));
  EXPECT_FALSE(cache.Contains(K(3)));
  EXPECT_TRUE(cache.Contains(K(1)));
  EXPECT_TRUE(cache.Contains(K(2)));
}

TEST(EngineCacheTest, ZeroCapacityCachesNothing) {
  EngineCache cache(0);
  cache.Insert(Keys({1}));
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.MatchPrefix(Keys({1})), 0u);
}

}  // namespace
}  // namespace kvstash::bench::workload
