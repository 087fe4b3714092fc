// Behaviour every transport shares, run over gRPC (TCP and the local Unix socket), UCX over
// TCP and UCX over shared memory against a real kvstashd: byte-exact payloads from 1 byte
// to 256 MiB, batched and asynchronous calls, idempotent puts, misses, prefix lookups with
// leases, exists, delete, stats, and the errors a caller can cause (unknown namespace,
// small buffers, too many keys). What only one transport has is tested beside its
// transport (ucx_test.cc, malformed_request_test.cc, local_socket_test.cc).
#include <sys/mman.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "tests/daemon_fixture.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

// Keys a daemon of this suite accepts per request.
constexpr int kMaxKeysPerRequest = 64;

class RoundTripTest : public TransportFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(
        StartDaemonOverParam({"storage.dram.capacity_bytes=768MiB",
                              absl::StrCat("server.max_keys_per_request=", kMaxKeysPerRequest)}));
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

  // A GetItem per payload into a zeroed buffer of its size, kept in `bufs`.
  static std::vector<GetItem> ZeroedGets(const std::vector<Payload>& payloads,
                                         std::vector<std::vector<uint8_t>>* bufs) {
    bufs->assign(payloads.size(), {});
    std::vector<GetItem> gets(payloads.size());
    for (size_t i = 0; i < payloads.size(); ++i) {
      (*bufs)[i].assign(payloads[i].bytes.size(), 0);
      gets[i].key = payloads[i].key;
      gets[i].data = (*bufs)[i].data();
      gets[i].capacity = (*bufs)[i].size();
    }
    return gets;
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

  // Gets `p` back through `client` and checks every byte, the metadata and the checksum
  // the daemon reports (Put sent none: the daemon computed it).
  void ExpectStored(Client& client, const Payload& p) {
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(client, ns_, p.key, p.bytes.size(), &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status << " size " << p.bytes.size();
    EXPECT_EQ(item.size, p.bytes.size());
    EXPECT_EQ(item.tokens, p.tokens);
    EXPECT_EQ(item.format, p.format);
    EXPECT_EQ(item.checksum, XXH3_64bits(p.bytes.data(), p.bytes.size()))
        << "checksum reported for " << p.bytes.size() << " bytes";
    EXPECT_TRUE(buf == p.bytes) << "payload of " << p.bytes.size() << " bytes differs";
  }
  void ExpectStored(const Payload& p) { ExpectStored(*client_, p); }

  std::mt19937_64 rng_{20240601};
};

TEST_P(RoundTripTest, ByteExactFromOneByteTo256MiB) {
  const std::vector<size_t> sizes = {1,          1 * kKiB,  4 * kKiB + 3, 64 * kKiB,
                                     256 * kKiB, 1 * kMiB,  1 * kMiB + 1, 4 * kMiB,
                                     16 * kMiB,  32 * kMiB, 64 * kMiB,    256 * kMiB};
  uint64_t kept_bytes = 0;
  for (const size_t size : sizes) {
    SCOPED_TRACE(size);
    std::vector<Payload> one = MakePayloads({size});
    ASSERT_TRUE(PutAll(*client_, ns_, one).ok());
    ASSERT_NO_FATAL_FAILURE(ExpectStored(one[0]));
    // The 256 MiB chunk would crowd the others out of DRAM; it was checked, drop it.
    if (size >= 256 * kMiB) {
      auto deleted = client_->Delete(ns_, {one[0].key});
      ASSERT_TRUE(deleted.ok()) << deleted.status();
      EXPECT_EQ(*deleted, 1u);
    } else {
      kept_bytes += size;
    }
  }
  auto stats = client_->Stats(&ns_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->chunks, sizes.size() - 1);
  EXPECT_EQ(stats->puts, sizes.size());
  EXPECT_EQ(stats->bytes, kept_bytes);
}

// A direct get's reply body lists arena runs (16 bytes each), which can be longer than a
// tiny chunk: that must not read as the daemon sending too many bytes.
TEST_P(RoundTripTest, ChunksOfOneToThirtyTwoBytes) {
  for (size_t size = 1; size <= 32; ++size) {
    std::vector<Payload> one = MakePayloads({size});
    ASSERT_TRUE(PutAll(*client_, ns_, one).ok()) << size;
    ASSERT_NO_FATAL_FAILURE(ExpectStored(one[0])) << size;
  }
}

TEST_P(RoundTripTest, ChecksumVerifyingClientReadsWhatOthersWrote) {
  std::vector<Payload> payloads = MakePayloads({1 * kMiB + 1, 3 * kMiB + 5});
  ASSERT_TRUE(PutAll(*client_, ns_, payloads).ok());
  ClientOptions options;
  options.verify_checksums = true;
  options.frame_bytes = 256 * kKiB;  // other frame boundaries than the writer's
  std::unique_ptr<Client> reader = NewClient(options);
  ASSERT_NE(reader, nullptr);
  auto ns = reader->OpenNamespace(spec_);
  ASSERT_TRUE(ns.ok()) << ns.status();
  EXPECT_EQ(ns->id, ns_.id);
  for (const Payload& p : payloads) ASSERT_NO_FATAL_FAILURE(ExpectStored(*reader, p));
}

TEST_P(RoundTripTest, GetIntoTooSmallBufferIsResourceExhausted) {
  std::vector<Payload> payloads = MakePayloads({64 * kKiB});
  ASSERT_TRUE(PutAll(*client_, ns_, payloads).ok());
  std::vector<uint8_t> buf;
  GetItem item;
  ASSERT_TRUE(GetOne(*client_, ns_, payloads[0].key, 64 * kKiB - 1, &buf, &item).ok());
  EXPECT_EQ(item.status.code(), absl::StatusCode::kResourceExhausted) << item.status;
  // The connection is still usable and the chunk intact.
  ExpectStored(payloads[0]);
}

TEST_P(RoundTripTest, BatchedPutAndGetWithAMissingKey) {
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

TEST_P(RoundTripTest, BatchWithAMissAndATooSmallBuffer) {
  std::vector<Payload> payloads =
      MakePayloads({3 * kKiB, 100 * kKiB, 2 * kMiB + 5, 5 * kMiB, size_t{17}, 1 * kMiB});
  ASSERT_NO_FATAL_FAILURE(PutBatch(payloads, /*already_present=*/false));
  // One Get: every chunk, an unknown key, and a chunk into a buffer too small for it.
  std::vector<std::vector<uint8_t>> bufs(payloads.size() + 2);
  std::vector<GetItem> gets(payloads.size() + 2);
  for (size_t i = 0; i < payloads.size(); ++i) {
    bufs[i].resize(payloads[i].bytes.size());
    gets[i].key = payloads[i].key;
  }
  const size_t miss = payloads.size(), small = payloads.size() + 1;
  gets[miss].key = RandomKey(rng_);
  bufs[miss].resize(kKiB);
  gets[small].key = payloads[2].key;
  bufs[small].resize(kMiB);
  for (size_t i = 0; i < gets.size(); ++i) {
    gets[i].data = bufs[i].data();
    gets[i].capacity = bufs[i].size();
  }
  ASSERT_TRUE(client_->Get(ns_, absl::MakeSpan(gets)).ok());
  for (size_t i = 0; i < payloads.size(); ++i) {
    ASSERT_TRUE(gets[i].status.ok()) << i << ": " << gets[i].status;
    EXPECT_EQ(gets[i].size, payloads[i].bytes.size());
    EXPECT_EQ(gets[i].tokens, payloads[i].tokens);
    EXPECT_TRUE(bufs[i] == payloads[i].bytes) << i;
  }
  EXPECT_EQ(gets[miss].status.code(), absl::StatusCode::kNotFound) << gets[miss].status;
  EXPECT_EQ(gets[small].status.code(), absl::StatusCode::kResourceExhausted) << gets[small].status;
  EXPECT_EQ(gets[small].size, payloads[2].bytes.size()) << "the size needed is reported";
}

// Three pages of which the middle one is unmapped again: a hole between two mapped pages.
class PagesWithAHole {
 public:
  PagesWithAHole() {
    void* p = mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    base_ = static_cast<uint8_t*>(p);
    EXPECT_EQ(munmap(hole(), kPage), 0);
  }
  ~PagesWithAHole() {
    munmap(base_, kPage);
    munmap(base_ + 2 * kPage, kPage);
  }
  uint8_t* first() const { return base_; }
  uint8_t* hole() const { return base_ + kPage; }
  // Whether the hole is still unmapped: another thread's mmap may have taken it.
  bool HoleUnmapped() const { return msync(hole(), kPage, MS_ASYNC) != 0 && errno == ENOMEM; }
  uint8_t* last() const { return base_ + 2 * kPage; }
  static constexpr size_t kPage = 4096;

 private:
  uint8_t* base_ = nullptr;
};

TEST_P(RoundTripTest, AnUnmappedBufferMidBatchFailsTheCallBeforeAnyByteMoves) {
  std::vector<Payload> payloads = MakePayloads({2 * kMiB, 100, 100, 3 * kKiB});
  PagesWithAHole pages;
  std::vector<PutItem> puts;
  for (const Payload& p : payloads) puts.push_back(p.AsPutItem());
  puts[2].data = pages.hole();
  if (!pages.HoleUnmapped()) GTEST_SKIP() << "another thread mapped the hole";
  const absl::Status put = client_->Put(ns_, absl::MakeSpan(puts));
  EXPECT_EQ(put.code(), absl::StatusCode::kInvalidArgument) << put;
  EXPECT_TRUE(absl::StrContains(put.message(), "PutItem 2")) << put;
  std::vector<Key128> keys;
  for (const Payload& p : payloads) keys.push_back(p.key);
  absl::StatusOr<std::vector<ChunkTier>> tiers = client_->Exists(ns_, keys);
  ASSERT_TRUE(tiers.ok()) << tiers.status();
  for (ChunkTier t : *tiers) EXPECT_EQ(t, ChunkTier::kNone) << "nothing of the refused call stored";

  // Buffers on both sides of the hole are fine; one inside it fails the whole call.
  std::memcpy(pages.first(), payloads[1].bytes.data(), 100);
  std::memcpy(pages.last(), payloads[2].bytes.data(), 100);
  puts[1].data = pages.first();
  puts[2].data = pages.last();
  const absl::Status stored = client_->Put(ns_, absl::MakeSpan(puts));
  ASSERT_TRUE(stored.ok()) << stored;
  for (const PutItem& item : puts) EXPECT_TRUE(item.status.ok()) << item.status;
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> gets = ZeroedGets(payloads, &bufs);
  gets[1].data = pages.first();
  gets[2].data = pages.hole();
  std::memset(pages.first(), 0, 100);
  if (!pages.HoleUnmapped()) GTEST_SKIP() << "another thread mapped the hole";
  const absl::Status get = client_->Get(ns_, absl::MakeSpan(gets));
  EXPECT_EQ(get.code(), absl::StatusCode::kInvalidArgument) << get;
  EXPECT_TRUE(absl::StrContains(get.message(), "GetItem 2")) << get;
  EXPECT_EQ(bufs[0], std::vector<uint8_t>(payloads[0].bytes.size(), 0)) << "no byte moved";
  EXPECT_EQ(pages.first()[0], 0) << "no byte moved";

  gets[2].data = pages.last();
  std::memset(pages.last(), 0, 100);
  ASSERT_TRUE(client_->Get(ns_, absl::MakeSpan(gets)).ok());
  for (size_t i = 0; i < gets.size(); ++i) ASSERT_TRUE(gets[i].status.ok()) << i << gets[i].status;
  EXPECT_TRUE(bufs[0] == payloads[0].bytes);
  EXPECT_EQ(std::memcmp(pages.first(), payloads[1].bytes.data(), 100), 0);
  EXPECT_EQ(std::memcmp(pages.last(), payloads[2].bytes.data(), 100), 0);
}

TEST_P(RoundTripTest, AsyncPutAndGet) {
  std::vector<Payload> payloads = MakePayloads({100 * kKiB, 2 * kMiB + 17, 5 * kMiB});
  std::vector<PutItem> puts;
  for (const Payload& p : payloads) puts.push_back(p.AsPutItem());
  std::future<absl::Status> put = client_->PutAsync(ns_, absl::MakeSpan(puts));
  ASSERT_TRUE(put.get().ok());
  for (const PutItem& item : puts) EXPECT_TRUE(item.status.ok()) << item.status;

  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> gets = ZeroedGets(payloads, &bufs);
  std::future<absl::Status> get = client_->GetAsync(ns_, absl::MakeSpan(gets));
  ASSERT_TRUE(get.get().ok());
  for (size_t i = 0; i < payloads.size(); ++i) {
    ASSERT_TRUE(gets[i].status.ok()) << gets[i].status;
    EXPECT_TRUE(bufs[i] == payloads[i].bytes) << i;
  }
}

TEST_P(RoundTripTest, PrefixLookupExistsAndDelete) {
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

TEST_P(RoundTripTest, LookupWithLeaseExistsDeleteStatsHealth) {
  std::vector<Payload> payloads = MakePayloads({64 * kKiB, 64 * kKiB});
  ASSERT_TRUE(PutAll(*client_, ns_, payloads).ok());
  const Key128 missing = RandomKey(rng_);
  auto hits = client_->Lookup(ns_, {payloads[0].key, payloads[1].key, missing}, 5000);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 2u);
  EXPECT_NE(hits->lease_id, 0u);
  ASSERT_EQ(hits->tiers.size(), 2u);
  EXPECT_EQ(hits->tiers[0], ChunkTier::kDram);
  // Getting under the lease releases it chunk by chunk.
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> gets;
  ASSERT_TRUE(GetMany(*client_, ns_, {payloads[0].key, payloads[1].key}, 64 * kKiB, &bufs, &gets,
                      hits->lease_id)
                  .ok());
  for (size_t i = 0; i < gets.size(); ++i) {
    ASSERT_TRUE(gets[i].status.ok()) << gets[i].status;
    EXPECT_TRUE(bufs[i] == payloads[i].bytes) << i;
  }
  auto exists = client_->Exists(ns_, {missing, payloads[1].key});
  ASSERT_TRUE(exists.ok()) << exists.status();
  EXPECT_EQ((*exists)[0], ChunkTier::kNone);
  EXPECT_EQ((*exists)[1], ChunkTier::kDram);
  auto stats = client_->Stats(&ns_);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->chunks, 2u);
  auto deleted = client_->Delete(ns_, {payloads[0].key, missing});
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 1u);
  auto health = client_->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_TRUE(health->serving);
}

TEST_P(RoundTripTest, NamespacesAreIsolated) {
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

// A namespace the daemon never registered fails the whole call, whichever call it is.
TEST_P(RoundTripTest, UnknownNamespaceIsFailedPrecondition) {
  ClientOptions options;
  options.max_retries = 0;
  std::unique_ptr<Client> client = NewClient(options);
  ASSERT_NE(client, nullptr);
  const NamespaceHandle unknown{RandomKey(rng_)};
  const Key128 key = RandomKey(rng_);
  std::vector<uint8_t> buf;
  GetItem item;
  const absl::Status get = GetOne(*client, unknown, key, kKiB, &buf, &item);
  EXPECT_EQ(get.code(), absl::StatusCode::kFailedPrecondition) << get;
  EXPECT_TRUE(absl::StrContains(get.message(), "unknown namespace")) << get;
  const std::vector<uint8_t> bytes(kKiB, 1);
  std::vector<PutItem> puts(1);
  puts[0].key = key;
  puts[0].data = bytes.data();
  puts[0].size = bytes.size();
  const absl::Status put = client->Put(unknown, absl::MakeSpan(puts));
  EXPECT_EQ(put.code(), absl::StatusCode::kFailedPrecondition) << put;
  EXPECT_EQ(client->Lookup(unknown, {key}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->Exists(unknown, {key}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client->Delete(unknown, {key}).status().code(), absl::StatusCode::kFailedPrecondition);
}

// More keys than server.max_keys_per_request are refused before anything is looked up.
TEST_P(RoundTripTest, TooManyKeysIsRefused) {
  std::vector<Key128> keys;
  for (int i = 0; i <= kMaxKeysPerRequest; ++i) keys.push_back(RandomKey(rng_));
  auto refused = [](const absl::Status& s) {
    return absl::IsInvalidArgument(s) || absl::IsResourceExhausted(s);
  };
  auto lookup = client_->Lookup(ns_, keys);
  EXPECT_TRUE(refused(lookup.status())) << lookup.status();
  auto exists = client_->Exists(ns_, keys);
  EXPECT_TRUE(refused(exists.status())) << exists.status();
  auto deleted = client_->Delete(ns_, keys);
  EXPECT_TRUE(refused(deleted.status())) << deleted.status();
  keys.pop_back();
  auto allowed = client_->Exists(ns_, keys);
  EXPECT_TRUE(allowed.ok()) << allowed.status();
}

TEST_P(RoundTripTest, RegisteredMemoryRoundTrip) {
  const size_t chunk = 4 * kMiB;
  std::vector<uint8_t> src(4 * chunk), dst(4 * chunk);
  ASSERT_TRUE(client_->RegisterMemory(src.data(), src.size()).ok());
  ASSERT_TRUE(client_->RegisterMemory(dst.data(), dst.size()).ok());
  std::vector<PutItem> puts(4);
  std::vector<GetItem> gets(4);
  for (size_t i = 0; i < 4; ++i) {
    puts[i].key = RandomKey(rng_);
    FillPattern(puts[i].key, src.data() + i * chunk, chunk);
    puts[i].data = src.data() + i * chunk;
    puts[i].size = chunk;
    gets[i].key = puts[i].key;
    gets[i].data = dst.data() + i * chunk;
    gets[i].capacity = chunk;
  }
  ASSERT_TRUE(client_->Put(ns_, absl::MakeSpan(puts)).ok());
  ASSERT_TRUE(client_->Get(ns_, absl::MakeSpan(gets)).ok());
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(puts[i].status.ok()) << puts[i].status;
    ASSERT_TRUE(gets[i].status.ok()) << gets[i].status;
  }
  EXPECT_TRUE(src == dst);
  EXPECT_TRUE(client_->UnregisterMemory(src.data()).ok());
  EXPECT_TRUE(client_->UnregisterMemory(dst.data()).ok());
  EXPECT_EQ(client_->UnregisterMemory(dst.data()).code(), absl::StatusCode::kNotFound);
}

TEST_P(RoundTripTest, SixteenConcurrentClients) {
  constexpr int kClients = 16;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(NewClient());
    ASSERT_NE(clients.back(), nullptr);
    ASSERT_TRUE(clients.back()->OpenNamespace(spec_).ok());
  }
  std::vector<std::string> errors(kClients);
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int round = 0; round < 4 && errors[t].empty(); ++round) {
        const size_t size = (round % 2 == 0 ? 64 * kKiB : 2 * kMiB) + t;
        std::vector<Key128> keys = PutFresh(*clients[t], ns_, rng, 2, size, 2);
        for (const Key128& key : keys) {
          std::vector<uint8_t> buf;
          GetItem item;
          absl::Status s = GetOne(*clients[t], ns_, key, size, &buf, &item);
          if (!s.ok() || !item.status.ok() || FirstPatternMismatch(key, buf.data(), size) != -1) {
            errors[t] = s.ok() ? item.status.ToString() + " or bytes differ" : s.ToString();
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kClients; ++t) EXPECT_EQ(errors[t], "") << "client " << t;
}

INSTANTIATE_TEST_SUITE_P(Transports, RoundTripTest,
                         ::testing::ValuesIn(AllTransportsAndLocalSocket()), TransportTestName);

}  // namespace
}  // namespace kvstash::testing
