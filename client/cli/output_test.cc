#include "client/cli/output.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace kvstash::cli {
namespace {

TEST(StatsTextTest, DramOnlyDaemonPrintsCountersAndDramUse) {
  ServerStats s;
  s.chunks = 1;
  s.bytes = 2048;
  s.lookup_hit_chunks = 9;
  s.tiers.push_back({ChunkTier::kDram, /*capacity_bytes=*/4096, /*used_bytes=*/1024});
  EXPECT_EQ(StatsText(s),
            "chunks 1\nbytes 2048 (2.0 KiB)\nhits 0\nmisses 0\nputs 0\nevictions 0\n"
            "deletes 0\nlookups 0\nlookup_hit_chunks 9\nhint_drops 0\nquota_evictions 0\n"
            "pin_quota_refusals 0\npinned_bytes 0 (0 B)\nsessions 0\n"
            "dram used 1024 / capacity 4096 (1.0 KiB of 4.0 KiB, 25.0%), chunks 0, hits 0\n");
}

TEST(StatsTextTest, NvmeCountersKeepTheirLines) {
  ServerStats s;
  s.tiers.push_back({ChunkTier::kDram, /*capacity_bytes=*/4096});
  s.tiers.push_back({ChunkTier::kNvme, /*capacity_bytes=*/8192, /*used_bytes=*/2048,
                     /*chunk_bytes=*/0, /*chunks=*/10});
  uint64_t next = 11;
#define KVSTASH_FILL(name, client, ...) s.client = next++;
  KVSTASH_NVME_COUNTERS(KVSTASH_FILL)
#undef KVSTASH_FILL
  const std::string text = StatsText(s);
  EXPECT_EQ(text.substr(text.find("nvme used")),
            "nvme used 2048 / capacity 8192 (2.0 KiB of 8.0 KiB, 25.0%), chunks 10, hits 0\n"
            "nvme hits 11 misses 12 evictions 13\n"
            "demotions 14 drops 15 failures 16 pending 17 declined 18\n"
            "cleanings 19\npromotions 20\nwrite_throughs 21\nchecksum_failures 22\n"
            "nvme io_errors 23\nrecovered_chunks 24\nnvme reopens 25 writes_suspended 26\n"
            "nvme gc_runs 27 gc_waits 28\n");
}

TEST(NamespacesTableTest, OneLinePerNamespaceUnregisteredWithoutModel) {
  NamespaceUsage registered;
  registered.id[15] = 1;
  registered.registered = true;
  registered.spec.model_id = "llama-3-8b";
  registered.tenant = "team-a";
  registered.tiers = {{ChunkTier::kDram, 3, 3 << 20}};
  registered.pinned_bytes = 1 << 20;
  NamespaceUsage recovered;
  recovered.id[0] = 0xff;
  recovered.tiers = {{ChunkTier::kNvme, 2, 2048}};
  const NamespaceUsage both[] = {registered, recovered};
  EXPECT_EQ(NamespacesTable(both),
            "namespace                         tenant       model                    dram "
            "dram_bytes     nvme nvme_bytes     pinned\n"
            "00000000000000000000000000000001  team-a       llama-3-8b                  3 "
            "   3.0 MiB        0        0 B    1.0 MiB\n"
            "ff000000000000000000000000000000  -            -                           0 "
            "       0 B        2    2.0 KiB        0 B\n"
            "2 namespaces\n");
  EXPECT_TRUE(absl::EndsWith(NamespacesTable({}), "pinned\n0 namespaces\n"));
}

}  // namespace
}  // namespace kvstash::cli
