// The counter tables (kvstash/stats_counters.h) against the wire schema: every counter has
// its proto field and the other way round, and ToProto copies each one.
#include "server/stats_reply.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstash/stats_counters.h"
#include "kvstash/v1/kvstash.pb.h"
#include "storage/chunk.h"

namespace kvstash::server {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;

#define KVSTASH_NAME(name, ...) #name,

std::set<std::string> ProtoFields(const Descriptor* d, const std::set<std::string>& except) {
  std::set<std::string> out;
  for (int i = 0; i < d->field_count(); ++i) {
    if (except.count(d->field(i)->name()) == 0) out.insert(d->field(i)->name());
  }
  return out;
}

// Every field named in `names` is a uint64 holding 1, 2, 3, ... in table order.
void ExpectSequence(const Message& m, const std::set<std::string>& except,
                    const std::vector<std::string>& names) {
  const Descriptor* d = m.GetDescriptor();
  for (size_t i = 0; i < names.size(); ++i) {
    const FieldDescriptor* f = d->FindFieldByName(names[i]);
    ASSERT_NE(f, nullptr) << names[i];
    ASSERT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_UINT64) << names[i];
    EXPECT_EQ(m.GetReflection()->GetUInt64(m, f), i + 1) << names[i];
  }
}

TEST(StatsTablesTest, StoreCountersMatchCounterSet) {
  const std::vector<std::string> names = {KVSTASH_STORE_COUNTERS(KVSTASH_NAME)};
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            ProtoFields(v1::CounterSet::descriptor(), {}))
      << "KVSTASH_STORE_COUNTERS and kvstash.v1.CounterSet list different counters";
  storage::CounterSnapshot in;
  uint64_t next = 1;
#define KVSTASH_FILL(name, ...) in.name = next++;
  KVSTASH_STORE_COUNTERS(KVSTASH_FILL)
  v1::CounterSet out;
  ToProto(in, &out);
  ExpectSequence(out, {}, names);
}

TEST(StatsTablesTest, TierStatsMatchTierStatsMessage) {
  const std::vector<std::string> names = {KVSTASH_TIER_STATS(KVSTASH_NAME)};
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            ProtoFields(v1::TierStats::descriptor(), {"tier"}))
      << "KVSTASH_TIER_STATS and kvstash.v1.TierStats list different fields";
  storage::TierStats in;
  in.tier = storage::Tier::kNvme;
  uint64_t next = 1;
  KVSTASH_TIER_STATS(KVSTASH_FILL)
  v1::TierStats out;
  ToProto(in, &out);
  EXPECT_EQ(out.tier(), v1::TIER_NVME);
  ExpectSequence(out, {"tier"}, names);
}

TEST(StatsTablesTest, NvmeCountersMatchNvmeCountersMessage) {
  const std::vector<std::string> names = {KVSTASH_NVME_COUNTERS(KVSTASH_NAME)};
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            ProtoFields(v1::NvmeCounters::descriptor(), {}))
      << "KVSTASH_NVME_COUNTERS and kvstash.v1.NvmeCounters list different counters";
  storage::NvmeCounters in;
  uint64_t next = 1;
  KVSTASH_NVME_COUNTERS(KVSTASH_FILL)
#undef KVSTASH_FILL
  v1::NvmeCounters out;
  ToProto(in, &out);
  ExpectSequence(out, {}, names);
}

#undef KVSTASH_NAME

}  // namespace
}  // namespace kvstash::server
