// Round trips through the client library against a real kvstashd: byte-exact payloads of
// many sizes, batched and asynchronous calls, idempotent puts, prefix lookups.
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "tests/daemon_process.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

class RoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DaemonOptions options;
    options.set = {"storage.dram.capacity_bytes=512MiB"};
    auto daemon = DaemonProcess::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = std::move(*daemon);
    auto client = ConnectClient(daemon_->uri());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    const std::string model = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    spec_ = TestNamespace(model);
    auto ns = client_->OpenNamespace(spec_);
    ASSERT_TRUE(ns.ok()) << ns.status();
    ns_ = *ns;
  }

  // Random-content payloads with distinct metadata.
  std::vector<Payload> MakePayloads(const std::vector<size_t>& sizes) {
    std::vector<Payload> out;
    for (size_t i = 0; i < sizes.size(); ++i) {
      Payload p;
      p.key = RandomKey(rng_);
      p.bytes = RandomBytes(rng_, sizes[i]);
      p.tokens = static_cast<uint32_t>(1 + i * 7);
      p.format = static_cast<uint32_t>(0xC0DE0000u + i);
      out.push_back(std::move(p));
    }
    return out;
  }

  // Puts `payloads` in one call and checks each item's result.
  void PutBatch(const std::vector<Payload>& payloads, bool already_present) {
    std::vector<PutItem> puts;
    for (const Payload& p : payloads) puts.push_back(p.AsPutItem());
    ASSERT_TRUE(client_->Put(ns_, absl::MakeSpan(puts)).ok());
    for (size_t i = 0; i < puts.size(); ++i) {
      EXPECT_TRUE(puts[i].status.ok()) << i << ": " << puts[i].status;
      EXPECT_EQ(puts[i].already_present, already_present) << i;
    }
  }

  // Gets `p` back and checks every byte and the metadata.
  void ExpectStored(const Payload& p) {
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(*client_, ns_, p.key, p.bytes.size(), &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status << " size " << p.bytes.size();
    EXPECT_EQ(item.size, p.bytes.size());
    EXPECT_EQ(item.tokens, p.tokens);
    EXPECT_EQ(item.format, p.format);
    EXPECT_TRUE(buf == p.bytes) << "payload of " << p.bytes.size() << " bytes differs";
  }

  std::mt19937_64 rng_{20240601};
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<Client> client_;
  Namespace spec_;
  NamespaceHandle ns_;
};

TEST_F(RoundTripTest, ByteExactAcrossSizes) {
  const std::vector<size_t> sizes = {1 * kKiB,     4 * kKiB + 3, 256 * kKiB, 1 * kMiB,
                                     1 * kMiB + 1, 4 * kMiB,     16 * kMiB,  64 * kMiB};
  for (const size_t size : sizes) {
    SCOPED_TRACE(size);
    std::vector<Payload> one = MakePayloads({size});
    ASSERT_TRUE(PutAll(*client_, ns_, one).ok());
    ExpectStored(one[0]);
  }
  auto stats = client_->Stats(&ns_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->chunks, sizes.size());
  EXPECT_EQ(stats->puts, sizes.size());
  uint64_t total = 0;
  for (const size_t size : sizes) total += size;
  EXPECT_EQ(stats->bytes, total);
}

TEST_F(RoundTripTest, ChecksumVerifyingClientReadsWhatOthersWrote) {
  std::vector<Payload> payloads = MakePayloads({1 * kMiB + 1, 3 * kMiB + 5});
  ASSERT_TRUE(PutAll(*client_, ns_, payloads).ok());
  ClientOptions options;
  options.verify_checksums = true;
  options.frame_bytes = 256 * kKiB;  // other frame boundaries than the writer's
  auto reader = ConnectClient(daemon_->uri(), options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto ns = (*reader)->OpenNamespace(spec_);
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_EQ(ns->id, ns_.id);
  for (const Payload& p : payloads) {
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(**reader, *ns, p.key, p.bytes.size(), &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_TRUE(buf == p.bytes);
  }
}

TEST_F(RoundTripTest, GetIntoTooSmallBufferIsResourceExhausted) {
  std::vector<Payload> payloads = MakePayloads({64 * kKiB});
  ASSERT_TRUE(PutAll(*client_, ns_, payloads).ok());
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*client_, ns_, payloads[0].key, 64 * kKiB - 1, &buf, &item).ok());
  EXPECT_EQ(item.status.code(), absl::StatusCode::kResourceExhausted) << item.status;
  // The connection is still usable and the chunk intact.
  ExpectStored(payloads[0]);
}

TEST_F(RoundTripTest, BatchedPutAndGetWithAMissingKey) {
  std::vector<size_t> sizes;
  std::uniform_int_distribution<size_t> size_dist(1, 2 * kMiB);
  for (int i = 0; i < 32; ++i) sizes.push_back(i % 8 == 0 ? (i + 1) * kKiB : size_dist(rng_));
  std::vector<Payload> payloads = MakePayloads(sizes);
  ASSERT_NO_FATAL_FAILURE(PutBatch(payloads, /*already_present=*/false));

  // One Get for all 32 plus a key never stored, placed in the middle of the batch.
  constexpr size_t kMissingAt = 13;
  const Key128 missing = RandomKey(rng_);
  std::vector<std::vector<uint8_t>> bufs(payloads.size() + 1);
  std::vector<GetItem> gets(payloads.size() + 1);
  for (size_t i = 0, p = 0; i < gets.size(); ++i) {
    const bool is_missing = i == kMissingAt;
    bufs[i].assign(is_missing ? kMiB : payloads[p].bytes.size(), 0);
    gets[i].key = is_missing ? missing : payloads[p++].key;
    gets[i].data = bufs[i].data();
    gets[i].capacity = bufs[i].size();
  }
  ASSERT_TRUE(client_->Get(ns_, absl::MakeSpan(gets)).ok());
  for (size_t i = 0, p = 0; i < gets.size(); ++i) {
    if (i == kMissingAt) {
      EXPECT_EQ(gets[i].status.code(), absl::StatusCode::kNotFound) << gets[i].status;
      continue;
    }
    const Payload& want = payloads[p++];
    ASSERT_TRUE(gets[i].status.ok()) << i << ": " << gets[i].status;
    EXPECT_EQ(gets[i].size, want.bytes.size()) << i;
    EXPECT_EQ(gets[i].tokens, want.tokens) << i;
    EXPECT_EQ(gets[i].format, want.format) << i;
    EXPECT_TRUE(bufs[i] == want.bytes) << i;
  }

  // Putting the same chunks again is acknowledged without storing anything new.
  ASSERT_NO_FATAL_FAILURE(PutBatch(payloads, /*already_present=*/true));
  auto stats = client_->Stats(&ns_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->chunks, payloads.size());
  EXPECT_EQ(stats->puts, payloads.size());
  EXPECT_GE(stats->misses, 1u);
  EXPECT_GE(stats->hits, payloads.size());
}

TEST_F(RoundTripTest, AsyncPutAndGet) {
  std::vector<Payload> payloads = MakePayloads({100 * kKiB, 2 * kMiB + 17, 5 * kMiB});
  std::vector<PutItem> puts;
  for (const Payload& p : payloads) puts.push_back(p.AsPutItem());
  std::future<absl::Status> put = client_->PutAsync(ns_, absl::MakeSpan(puts));
  ASSERT_TRUE(put.get().ok());
  for (const PutItem& item : puts) EXPECT_TRUE(item.status.ok()) << item.status;

  std::vector<std::vector<uint8_t>> bufs(payloads.size());
  std::vector<GetItem> gets(payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    bufs[i].assign(payloads[i].bytes.size(), 0);
    gets[i].key = payloads[i].key;
    gets[i].data = bufs[i].data();
    gets[i].capacity = bufs[i].size();
  }
  std::future<absl::Status> get = client_->GetAsync(ns_, absl::MakeSpan(gets));
  ASSERT_TRUE(get.get().ok());
  for (size_t i = 0; i < payloads.size(); ++i) {
    ASSERT_TRUE(gets[i].status.ok()) << gets[i].status;
    EXPECT_TRUE(bufs[i] == payloads[i].bytes) << i;
  }
}

TEST_F(RoundTripTest, PrefixLookupExistsAndDelete) {
  const KeyChain chain(spec_);
  std::vector<int32_t> tokens(6 * spec_.chunk_tokens);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(1000 + i);
  const std::vector<Key128> keys = chain.PrefixKeys(tokens);
  ASSERT_EQ(keys.size(), 6u);

  std::vector<Payload> payloads;
  for (const int chunk : {0, 1, 2, 4}) {
    Payload p;
    p.key = keys[chunk];
    p.bytes = PatternBytes(p.key, 64 * kKiB + chunk);
    p.tokens = spec_.chunk_tokens;
    payloads.push_back(std::move(p));
  }
  ASSERT_TRUE(PutAll(*client_, ns_, payloads).ok());

  auto hits = client_->Lookup(ns_, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 3u);
  ASSERT_EQ(hits->tiers.size(), 3u);
  for (const ChunkTier tier : hits->tiers) EXPECT_EQ(tier, ChunkTier::kDram);
  EXPECT_EQ(hits->lease_id, 0u) << "no lease was asked for";

  auto present = client_->Exists(ns_, keys);
  ASSERT_TRUE(present.ok()) << present.status();
  const std::vector<ChunkTier> want = {ChunkTier::kDram, ChunkTier::kDram, ChunkTier::kDram,
                                       ChunkTier::kNone, ChunkTier::kDram, ChunkTier::kNone};
  EXPECT_EQ(*present, want);

  // A prompt that diverges in its first chunk hits nothing.
  std::vector<int32_t> other = tokens;
  other[0] = -1;
  auto none = client_->Lookup(ns_, chain.PrefixKeys(other));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->hit_count, 0u);
  EXPECT_TRUE(none->tiers.empty());

  auto deleted = client_->Delete(ns_, {keys[1], keys[3]});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 1u) << "keys[3] was never stored";
  auto shrunk = client_->Lookup(ns_, keys);
  ASSERT_TRUE(shrunk.ok()) << shrunk.status();
  EXPECT_EQ(shrunk->hit_count, 1u);

  auto stats = client_->Stats(&ns_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->chunks, 3u);
  EXPECT_EQ(stats->deletes, 1u);
  EXPECT_EQ(stats->lookups, 3u);
  EXPECT_EQ(stats->lookup_hit_chunks, 3u + 0u + 1u);
}

TEST_F(RoundTripTest, NamespacesAreIsolated) {
  std::vector<Payload> payloads = MakePayloads({32 * kKiB});
  ASSERT_TRUE(PutAll(*client_, ns_, payloads).ok());
  Namespace other_spec = spec_;
  other_spec.dtype = "bf16";
  auto other = client_->OpenNamespace(other_spec);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_NE(other->id, ns_.id);
  auto present = client_->Exists(*other, {payloads[0].key});
  ASSERT_TRUE(present.ok()) << present.status();
  EXPECT_EQ((*present)[0], ChunkTier::kNone);
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*client_, *other, payloads[0].key, 32 * kKiB, &buf, &item).ok());
  EXPECT_EQ(item.status.code(), absl::StatusCode::kNotFound) << item.status;
}

}  // namespace
}  // namespace kvstash::testing
