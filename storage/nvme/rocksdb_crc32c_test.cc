// The CRC32C override RocksDB's calls bind to: known vectors, chaining across arbitrary
// splits and alignments against a bitwise reference, and RocksDB's own checksum generator
// reaching it.
#include "storage/nvme/rocksdb_crc32c.h"

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "rocksdb/file_checksum.h"

namespace kvstash::storage {
namespace {

uint32_t Reference(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

uint32_t Crc(const std::string& s) { return Crc32cExtend(0, s.data(), s.size()); }

TEST(RocksDbCrc32cTest, KnownVectors) {
  EXPECT_EQ(Crc("123456789"), 0xe3069283u);
  EXPECT_EQ(Crc(std::string(32, '\0')), 0x8a9136aau);
  EXPECT_EQ(Crc(std::string(32, '\xff')), 0x62a8ab43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(Crc(ascending), 0x46dd794eu);
  EXPECT_EQ(Crc(""), 0u);
}

TEST(RocksDbCrc32cTest, ChainedPiecesMatchTheReference) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    const size_t offset = rng() % 8;  // unaligned starts
    std::string buf(offset + rng() % 5000, '\0');
    for (char& c : buf) c = static_cast<char>(rng());
    const std::string data = buf.substr(offset);
    uint32_t crc = 0;
    for (size_t at = 0; at < data.size();) {
      const size_t piece = std::min<size_t>(data.size() - at, rng() % 97);
      crc = Crc32cExtend(crc, buf.data() + offset + at, piece);
      at += piece;
    }
    ASSERT_EQ(crc, Reference(data)) << "size " << data.size() << " offset " << offset;
  }
}

// Buffers long enough for the three-lane path, around its stride (3 x 8 KiB) and past it.
TEST(RocksDbCrc32cTest, LongBuffersMatchTheReference) {
  std::mt19937_64 rng(11);
  for (size_t size : {24575, 24576, 24589, 49152, 200003}) {
    for (size_t offset : {0, 3}) {
      std::string buf(offset + size, '\0');
      for (char& c : buf) c = static_cast<char>(rng());
      const std::string data = buf.substr(offset);
      EXPECT_EQ(Crc32cExtend(0, buf.data() + offset, size), Reference(data))
          << "size " << size << " offset " << offset;
      const uint32_t head = Crc32cExtend(0, data.data(), 5);
      EXPECT_EQ(Crc32cExtend(head, data.data() + 5, size - 5), Reference(data)) << size;
    }
  }
}

TEST(RocksDbCrc32cTest, RocksDbCallsBindToTheOverride) {
  if (!__builtin_cpu_supports("sse4.2")) GTEST_SKIP() << "no SSE4.2: RocksDB's own code runs";
  EXPECT_STREQ(RocksDbCrc32cImplementation(), "sse4.2");
}

TEST(RocksDbCrc32cTest, RocksDbChecksumGeneratorAgrees) {
  const std::string data(1 << 20, 'k');
  std::shared_ptr<rocksdb::FileChecksumGenFactory> factory =
      rocksdb::GetFileChecksumGenCrc32cFactory();
  rocksdb::FileChecksumGenContext context;
  std::unique_ptr<rocksdb::FileChecksumGenerator> gen =
      factory->CreateFileChecksumGenerator(context);
  gen->Update(data.data(), data.size());
  gen->Finalize();
  const std::string sum = gen->GetChecksum();
  ASSERT_EQ(sum.size(), 4u);
  uint32_t got = 0;
  for (unsigned char b : sum) got = (got << 8) | b;
  EXPECT_EQ(got, Reference(data));
}

}  // namespace
}  // namespace kvstash::storage
