#include "bench/workload/simulator.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

namespace kvstash::bench::workload {
namespace {

constexpr uint32_t kChunk = 4;

// A store in memory whose calls take fixed times, so the simulation's clock is exact.
class FakeStore : public RemoteStore {
 public:
  double lookup_s = 0.001, fetch_s_per_chunk = 0.01, put_s_per_chunk = 0.02;
  uint32_t nvme_from = UINT32_MAX;  // hits from this one on are reported on NVMe
  absl::flat_hash_map<Key128, PutHints> stored;
  std::vector<uint64_t> lookup_sessions;

  absl::StatusOr<LookupReply> Lookup(absl::Span<const Key128> keys, uint64_t session) override {
    lookup_sessions.push_back(session);
    LookupReply r;
    while (r.hits < keys.size() && stored.contains(keys[r.hits])) ++r.hits;
    for (uint32_t i = 0; i < r.hits; ++i) r.nvme.push_back(i >= nvme_from);
    r.seconds = lookup_s;
    return r;
  }
  absl::StatusOr<FetchReply> Fetch(absl::Span<const Key128> keys, uint64_t) override {
    return FetchReply{static_cast<uint32_t>(keys.size()), fetch_s_per_chunk * keys.size()};
  }
  absl::StatusOr<PutReply> Put(absl::Span<const PutChunk> chunks) override {
    for (const PutChunk& c : chunks) stored[c.key] = c.hints;
    PutReply r;
    r.stored = chunks.size();
    r.seconds = put_s_per_chunk * chunks.size();
    return r;
  }
};

std::vector<int32_t> Tokens(int n, int32_t base) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = base + i;
  return t;
}

Turn MakeTurn(std::vector<int32_t> prompt, int output, double delay) {
  Turn t;
  t.prompt = std::move(prompt);
  t.output = Tokens(output, 9000);
  t.delay_s = delay;
  return t;
}

SimOptions Options() {
  SimOptions o;
  o.cost = CostModel{{100, 0}, 10};  // 100 tokens/s prefill, 10 tokens/s decode
  o.chunk_tokens = kChunk;
  o.chunk_model_bytes = 1000;
  o.byte_scale = 0.5;
  return o;
}

KeyChain Chain() { return KeyChain(Key128{}, HashAlgo::kXxh3_128, kChunk); }

TEST(SimulatorTest, OneGpuQueuesPrefills) {
  Trace trace;
  trace.sessions = {Session{0, {MakeTurn(Tokens(10, 0), 1, 0)}},
                    Session{0, {MakeTurn(Tokens(20, 100), 1, 0)}}};
  const SimResult r = Simulate(trace, Chain(), Options(), nullptr);
  ASSERT_EQ(r.ttft_s.size(), 2u);
  EXPECT_DOUBLE_EQ(r.ttft_s[0], 0.1);
  EXPECT_DOUBLE_EQ(r.ttft_s[1], 0.3);  // waited for the first
  EXPECT_DOUBLE_EQ(r.gpu_prefill_s, 0.3);
  EXPECT_EQ(r.prompt_tokens, 30u);
}

TEST(SimulatorTest, EngineCacheHitsSkipPrefill) {
  Trace trace;
  trace.sessions = {Session{0, {MakeTurn(Tokens(12, 0), 1, 0), MakeTurn(Tokens(16, 0), 1, 5)}}};
  SimOptions o = Options();
  o.engine_capacity_chunks = 100;
  const SimResult r = Simulate(trace, Chain(), o, nullptr);
  ASSERT_EQ(r.ttft_s.size(), 2u);
  EXPECT_EQ(r.engine_hit_tokens, 12u);
  EXPECT_NEAR(r.ttft_s[1], 0.04, 1e-12);  // 4 new tokens
}

TEST(SimulatorTest, StoreHitsAreFetchedAndTimedByByteScale) {
  Trace trace;
  trace.sessions = {Session{0, {MakeTurn(Tokens(12, 0), 1, 0), MakeTurn(Tokens(16, 0), 1, 5)}}};
  FakeStore store;
  const SimResult r = Simulate(trace, Chain(), Options(), &store);  // no engine cache
  ASSERT_EQ(r.ttft_s.size(), 2u);
  EXPECT_EQ(r.dram_hit_tokens, 12u);
  // lookup + 3 chunks * 0.01 s / byte_scale 0.5 + 4 tokens of prefill.
  EXPECT_NEAR(r.ttft_s[1], 0.001 + 0.06 + 0.04, 1e-12);
  EXPECT_EQ(r.fetched_model_bytes, 3000u);
  EXPECT_EQ(r.put_model_bytes, 4000u);  // 3 then 1 prompt chunks; outputs fill no chunk
  EXPECT_EQ(r.wire_bytes, (3u + 4u) * 500u);
}

TEST(SimulatorTest, FetchesOverlapAnotherRequestsPrefill) {
  Trace trace;
  const std::vector<int32_t> shared = Tokens(40, 0);
  trace.sessions = {Session{0, {MakeTurn(shared, 1, 0)}},
                    Session{10, {MakeTurn(Tokens(100, 500), 1, 0)}},
                    Session{10, {MakeTurn(shared, 1, 0)}}};
  FakeStore store;
  const SimResult r = Simulate(trace, Chain(), Options(), &store);
  ASSERT_EQ(r.ttft_s.size(), 3u);
  EXPECT_DOUBLE_EQ(r.ttft_s[1], 0.001 + 1.0);  // a miss: lookup then 100 tokens
  // The third fetched its 10 chunks (0.2 s) while the GPU ran the second, waited for it,
  // then computed its last token.
  EXPECT_NEAR(r.ttft_s[2], 1.001 + 0.01, 1e-9);
}

// Four turns of one chat, each resending the last prompt plus one chunk.
Trace GrowingChat() {
  Trace trace;
  trace.sessions = {Session{0,
                            {MakeTurn(Tokens(12, 0), 1, 0), MakeTurn(Tokens(16, 0), 1, 5),
                             MakeTurn(Tokens(20, 0), 1, 5), MakeTurn(Tokens(24, 0), 1, 5)}}};
  return trace;
}

std::unique_ptr<FetchAdvisor> Advisor(const SimOptions& o) {
  FetchAdvisorOptions a;
  a.prefill = o.cost.prefill;
  a.kv_bytes_per_token = o.chunk_model_bytes / o.chunk_tokens;
  return *FetchAdvisor::Create(a);
}

TEST(SimulatorTest, AdvisorRecomputesWhatASlowStoreWouldFetch) {
  SimOptions o = Options();
  FakeStore store;
  store.fetch_s_per_chunk = 1;  // 2 s a chunk after byte_scale; recomputing it takes 0.04 s
  const SimResult off = Simulate(GrowingChat(), Chain(), o, &store);
  EXPECT_EQ(off.dram_hit_tokens, 12u + 16u + 20u);
  EXPECT_EQ(off.declined_chunks, 0u);

  std::unique_ptr<FetchAdvisor> advisor = Advisor(o);
  o.advisor = advisor.get();
  store.stored.clear();
  const SimResult on = Simulate(GrowingChat(), Chain(), o, &store);
  // The first fetch, at the advisor's prior bandwidth, shows the store is slow; the later
  // turns recompute their 4 and 5 hit chunks.
  EXPECT_EQ(on.dram_hit_tokens, 12u);
  EXPECT_EQ(on.declined_chunks, 4u + 5u);
  EXPECT_EQ(advisor->Observations(ChunkTier::kDram), 1u);
  EXPECT_NEAR(advisor->BandwidthBytesPerSecond(ChunkTier::kDram), 3000 / (6 - 200e-6), 1e-6);
  ASSERT_EQ(on.ttft_s.size(), 4u);
  EXPECT_LT(on.ttft_s[3], off.ttft_s[3]);
}

TEST(SimulatorTest, AdvisorFetchesEverythingFromAFastStore) {
  SimOptions o = Options();
  std::unique_ptr<FetchAdvisor> advisor = Advisor(o);
  o.advisor = advisor.get();
  FakeStore store;
  store.fetch_s_per_chunk = 1e-6;
  const SimResult r = Simulate(GrowingChat(), Chain(), o, &store);
  EXPECT_EQ(r.dram_hit_tokens, 12u + 16u + 20u);
  EXPECT_EQ(r.declined_chunks, 0u);
}

TEST(SimulatorTest, AdvisorLearnsNvmeFromMixedFetches) {
  SimOptions o = Options();
  std::unique_ptr<FetchAdvisor> advisor = Advisor(o);
  o.advisor = advisor.get();
  FakeStore store;
  store.nvme_from = 1;            // the first chunk in DRAM, the rest on NVMe
  store.fetch_s_per_chunk = 0.5;  // 1 s a chunk after byte_scale
  const SimResult r = Simulate(GrowingChat(), Chain(), o, &store);
  // Turn 2 fetched 1 DRAM and 2 NVMe chunks in 3 s; NVMe is charged all but what the DRAM
  // chunk takes at DRAM's prior rate (next to nothing). Turn 3 then fetches only its DRAM
  // chunk, which shows DRAM slow too, and turn 4 recomputes everything.
  EXPECT_EQ(r.nvme_hit_tokens, 8u);
  EXPECT_EQ(r.dram_hit_tokens, 4u + 4u);
  EXPECT_EQ(advisor->Observations(ChunkTier::kNvme), 1u);
  EXPECT_EQ(advisor->Observations(ChunkTier::kDram), 1u);
  EXPECT_NEAR(advisor->BandwidthBytesPerSecond(ChunkTier::kNvme), 2000 / (3 - 1e-7 - 200e-6), 1e-6);
  EXPECT_EQ(r.declined_chunks, 3u + 5u);
}

TEST(SimulatorTest, HintsReachThePutsAndLookups) {
  Trace trace;
  trace.sessions = {Session{0, {MakeTurn(Tokens(12, 0), 1, 0), MakeTurn(Tokens(16, 0), 1, 5)}}};
  trace.sessions[0].turns[0].known_pause_s = 5;
  SimOptions o = Options();
  o.hints = HintOptions{true, true, true};
  FakeStore store;
  Simulate(trace, Chain(), o, &store);
  const std::vector<Key128> keys = Chain().PrefixKeys(Tokens(12, 0));
  const PutHints& second = store.stored.at(keys[1]);
  EXPECT_EQ(second.session_id, 1u);
  EXPECT_TRUE(second.has_parent);
  EXPECT_EQ(second.parent, keys[0]);
  EXPECT_EQ(second.ttl_ms, 8500u);
  EXPECT_FALSE(store.stored.at(keys[0]).has_parent);
  EXPECT_EQ(store.lookup_sessions, (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(o.hints.Name(), "session+parent+ttl");
}

TEST(SimulatorTest, PositionIndependentContentIsCounted) {
  Trace trace;
  std::vector<int32_t> a = Tokens(4, 0), b = Tokens(4, 100);
  std::vector<int32_t> ab = a, ba = b;
  ab.insert(ab.end(), b.begin(), b.end());
  ba.insert(ba.end(), a.begin(), a.end());
  ab.push_back(7);
  ba.push_back(7);
  trace.sessions = {Session{0, {MakeTurn(ab, 1, 0)}}, Session{5, {MakeTurn(ba, 1, 0)}}};
  SimOptions o = Options();
  o.pi_capacity_chunks = 10;
  const SimResult r = Simulate(trace, Chain(), o, nullptr);
  EXPECT_EQ(r.pi_extra_tokens, 8u);  // both chunks of the second prompt, by content
}

TEST(SimulatorTest, WorkingSetCountsUniqueChunks) {
  Trace trace;
  trace.sessions = {Session{0, {MakeTurn(Tokens(8, 0), 4, 0)}},
                    Session{0, {MakeTurn(Tokens(9, 0), 3, 0)}}};
  EXPECT_EQ(WorkingSetChunks(trace, Chain()), 3u + 1u);  // 0..3, 4..7, then two third chunks
  EXPECT_EQ(LargestRequestChunks(trace, kChunk), 3u);
}

}  // namespace
}  // namespace kvstash::bench::workload
