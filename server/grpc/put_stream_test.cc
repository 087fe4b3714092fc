#include "server/grpc/put_stream.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/namespace_spec.h"

namespace kvstash::server {
namespace {

// Records the events the parser hands out.
class RecordingSink final : public PutStreamSink {
 public:
  absl::Status OnNamespace(absl::string_view id) override {
    events.push_back("ns");
    if (id.size() != 16) return absl::InvalidArgumentError("bad id");
    return absl::OkStatus();
  }
  void OnChunkStart(const PutChunkHeader& h) override {
    events.push_back("start " + std::to_string(h.index) + " " + std::to_string(h.meta.size_bytes));
  }
  void OnChunkPayload(absl::Span<const grpc::Slice> slices) override {
    size_t n = 0;
    for (const grpc::Slice& s : slices) n += s.size();
    events.push_back("data " + std::to_string(n));
  }
  void OnChunkEnd() override { events.push_back("end"); }

  std::vector<std::string> events;
};

grpc::ByteBuffer Frame(bool with_ns, uint64_t header_size, size_t payload) {
  v1::PutFrame f;
  if (with_ns) f.set_namespace_id(std::string(16, 'n'));
  if (header_size > 0) {
    f.mutable_header()->set_key(std::string(16, 'k'));
    f.mutable_header()->set_size_bytes(header_size);
  }
  grpc::Slice data(std::string(payload, 'p'));
  return wire::EncodeFrame(f, absl::MakeConstSpan(&data, payload > 0 ? 1 : 0));
}

TEST(PutStreamParserTest, HandsOutChunksInOrder) {
  RecordingSink sink;
  PutStreamParser parser(ServiceLimits{}, &sink);
  ASSERT_TRUE(parser.OnFrame(Frame(true, 10, 4)).ok());
  ASSERT_TRUE(parser.OnFrame(Frame(false, 0, 6)).ok());
  ASSERT_TRUE(parser.OnFrame(Frame(false, 3, 3)).ok());
  EXPECT_TRUE(parser.OnEnd().ok());
  EXPECT_EQ(sink.events, (std::vector<std::string>{"ns", "start 0 10", "data 4", "data 6", "end",
                                                   "start 1 3", "data 3", "end"}));
  EXPECT_EQ(parser.chunks_done(), 2u);
  EXPECT_EQ(parser.bytes_received(), 13u);
}

TEST(PutStreamParserTest, RefusesBrokenGrammar) {
  RecordingSink sink;
  PutStreamParser no_ns(ServiceLimits{}, &sink);
  EXPECT_EQ(no_ns.OnFrame(Frame(false, 10, 0)).message(),
            "the first Put frame must carry namespace_id");

  PutStreamParser overlap(ServiceLimits{}, &sink);
  ASSERT_TRUE(overlap.OnFrame(Frame(true, 10, 4)).ok());
  EXPECT_EQ(overlap.OnFrame(Frame(false, 10, 0)).message(),
            "header of chunk 1 arrived with 6 bytes of chunk 0 still missing");
  EXPECT_EQ(overlap.OnEnd().message(), "stream ended with 6 bytes of chunk 0 missing");

  PutStreamParser too_much(ServiceLimits{}, &sink);
  EXPECT_EQ(too_much.OnFrame(Frame(true, 2, 3)).message(),
            "chunk 0: frame carries 3 bytes but only 2 remain of size_bytes");

  PutStreamParser outside(ServiceLimits{}, &sink);
  EXPECT_EQ(outside.OnFrame(Frame(true, 0, 3)).message(),
            "data frame outside a chunk (no header precedes it)");

  ServiceLimits small;
  small.max_frame_bytes = 2;
  PutStreamParser big_frame(small, &sink);
  EXPECT_EQ(big_frame.OnFrame(Frame(true, 5, 3)).code(), absl::StatusCode::kResourceExhausted);
}

TEST(PutStreamParserTest, RefusesAChangedNamespace) {
  RecordingSink sink;
  PutStreamParser parser(ServiceLimits{}, &sink);
  ASSERT_TRUE(parser.OnFrame(Frame(true, 0, 0)).ok());
  v1::PutFrame other;
  other.set_namespace_id(std::string(16, 'o'));
  EXPECT_EQ(parser.OnFrame(wire::EncodeFrame(other, {})).message(),
            "namespace_id changed within one Put stream");
}

}  // namespace
}  // namespace kvstash::server
