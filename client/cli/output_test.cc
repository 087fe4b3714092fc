#include "client/cli/output.h"

#include "gtest/gtest.h"

namespace kvstash::cli {
namespace {

TEST(StatsTextTest, DramOnlyDaemonPrintsCountersAndDramUse) {
  ServerStats s;
  s.chunks = 1;
  s.bytes = 2048;
  s.lookup_hit_chunks = 9;
  s.dram_capacity_bytes = 4096;
  s.dram_used_bytes = 1024;
  EXPECT_EQ(StatsText(s),
            "chunks 1\nbytes 2048 (2.0 KiB)\nhits 0\nmisses 0\nputs 0\nevictions 0\n"
            "deletes 0\nlookups 0\nlookup_hit_chunks 9\n"
            "dram used 1024 / capacity 4096 (1.0 KiB of 4.0 KiB, 25.0%)\n");
}

TEST(StatsTextTest, NvmeCountersKeepTheirLines) {
  ServerStats s;
  s.nvme_capacity_bytes = 8192;
  s.nvme_used_bytes = 2048;
  s.nvme_chunks = 10;
  uint64_t next = 11;
#define KVSTASH_FILL(name, client, ...) s.client = next++;
  KVSTASH_NVME_COUNTERS(KVSTASH_FILL)
#undef KVSTASH_FILL
  const std::string text = StatsText(s);
  EXPECT_EQ(text.substr(text.find("nvme used")),
            "nvme used 2048 / capacity 8192 (2.0 KiB of 8.0 KiB), chunks 10\n"
            "nvme hits 11 misses 12 evictions 13\n"
            "demotions 14 drops 15 failures 16 pending 17 declined 18\n"
            "cleanings 19\npromotions 20\nwrite_throughs 21\nchecksum_failures 22\n"
            "nvme io_errors 23\nrecovered_chunks 24\nnvme reopens 25 writes_suspended 26\n"
            "nvme gc_runs 27 gc_waits 28\n");
}

}  // namespace
}  // namespace kvstash::cli
