// Wire-level abuse of kvstashd through the generated gRPC stub: malformed keys and
// namespaces, broken Put streams, oversized chunks and frames. Each case checks the status
// code the protocol promises, and every test ends by checking that the daemon is still
// alive and serves a normal round trip.
#include <grpcpp/grpcpp.h>
#include <xxhash.h>

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "tests/daemon_fixture.h"
#include "tests/daemon_process.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

using grpc::StatusCode;

constexpr size_t kMaxChunk = kMiB;  // storage.max_chunk_bytes below
constexpr size_t kMaxFrame = kMiB;  // server.max_frame_bytes below

std::unique_ptr<grpc::ClientContext> Context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return ctx;
}

v1::PutFrame Header(const std::string& ns, const std::string& key, uint64_t size,
                    std::string data = {}) {
  v1::PutFrame frame;
  frame.set_namespace_id(ns);
  frame.mutable_header()->set_key(key);
  frame.mutable_header()->set_size_bytes(size);
  frame.mutable_header()->set_tokens(16);
  frame.set_data(std::move(data));
  return frame;
}

v1::PutFrame Data(std::string data) {
  v1::PutFrame frame;
  frame.set_data(std::move(data));
  return frame;
}

class MalformedRequestTest : public DaemonFixture {
 protected:
  void SetUp() override {
    DaemonFixtureOptions options;
    options.set = {"storage.dram.capacity_bytes=64MiB", "storage.max_chunk_bytes=1MiB",
                   "server.max_frame_bytes=1MiB", "server.max_keys_per_request=64"};
    options.connect = false;  // the requests go through a raw stub
    ASSERT_NO_FATAL_FAILURE(StartDaemon(options));
    stub_ = RawStub(daemon_->address());
    spec_ = *options_.spec;
    auto ns = RawRegister(*stub_, spec_);
    ASSERT_TRUE(ns.ok()) << ns.status();
    ASSERT_EQ(ns->size(), 16u);
    ns_ = *ns;
  }

  // Whatever happened in the test, the daemon must still be up and serving.
  void TearDown() override {
    if (daemon_ == nullptr) return;
    ASSERT_TRUE(daemon_->Running()) << "kvstashd died";
    auto client = ConnectClient(daemon_->uri());
    ASSERT_TRUE(client.ok()) << client.status();
    auto ns = (*client)->OpenNamespace(spec_);
    ASSERT_TRUE(ns.ok()) << ns.status();
    Payload p;
    p.key = RandomKey(rng_);
    p.bytes = PatternBytes(p.key, 512 * kKiB + 1);
    ASSERT_TRUE(PutAll(**client, *ns, {p}).ok());
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(**client, *ns, p.key, p.bytes.size(), &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_TRUE(buf == p.bytes);
  }

  // Streams `frames` as one Put call.
  grpc::Status Put(const std::vector<v1::PutFrame>& frames, v1::PutResponse* response) {
    auto ctx = Context();
    auto writer = stub_->Put(ctx.get(), response);
    for (const v1::PutFrame& frame : frames) {
      if (!writer->Write(frame)) break;  // the server already ended the call
    }
    writer->WritesDone();
    return writer->Finish();
  }

  grpc::Status Get(const std::string& ns, const std::string& keys,
                   std::vector<v1::GetFrame>* frames) {
    auto ctx = Context();
    v1::GetRequest request;
    request.set_namespace_id(ns);
    request.set_keys(keys);
    auto reader = stub_->Get(ctx.get(), request);
    v1::GetFrame frame;
    while (reader->Read(&frame)) frames->push_back(frame);
    return reader->Finish();
  }

  grpc::Status Lookup(const std::string& ns, const std::string& keys) {
    auto ctx = Context();
    v1::LookupRequest request;
    request.set_namespace_id(ns);
    request.set_keys(keys);
    v1::LookupResponse response;
    return stub_->Lookup(ctx.get(), request, &response);
  }

  grpc::Status Exists(const std::string& ns, const std::string& keys,
                      v1::ExistsResponse* response) {
    auto ctx = Context();
    v1::KeysRequest request;
    request.set_namespace_id(ns);
    request.set_keys(keys);
    return stub_->Exists(ctx.get(), request, response);
  }

  grpc::Status Delete(const std::string& ns, const std::string& keys) {
    auto ctx = Context();
    v1::KeysRequest request;
    request.set_namespace_id(ns);
    request.set_keys(keys);
    v1::DeleteResponse response;
    return stub_->Delete(ctx.get(), request, &response);
  }

  // Whether `key` is stored in the test's namespace.
  bool Present(const std::string& key) {
    v1::ExistsResponse response;
    grpc::Status status = Exists(ns_, key, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.present().size() == 1 && response.present()[0] != 0;
  }

  std::string NewKey() { return KeyToBytes(RandomKey(rng_)); }

  std::mt19937_64 rng_{99};
  std::unique_ptr<v1::KvStash::Stub> stub_;
  // spec_'s id as the daemon named it; hides DaemonFixture::ns_, as no Client runs here.
  std::string ns_;
};

#define EXPECT_CODE(status, want)                                           \
  do {                                                                      \
    const grpc::Status s_ = (status);                                       \
    EXPECT_EQ(s_.error_code(), (want))                                      \
        << #status << ": " << s_.error_code() << " " << s_.error_message(); \
  } while (0)

TEST_F(MalformedRequestTest, KeysNotAMultipleOf16) {
  EXPECT_CODE(Lookup(ns_, std::string(15, 'k')), StatusCode::INVALID_ARGUMENT);
  EXPECT_CODE(Lookup(ns_, std::string(33, 'k')), StatusCode::INVALID_ARGUMENT);
  v1::ExistsResponse exists;
  EXPECT_CODE(Exists(ns_, std::string(17, 'k'), &exists), StatusCode::INVALID_ARGUMENT);
  EXPECT_CODE(Delete(ns_, std::string(31, 'k')), StatusCode::INVALID_ARGUMENT);
  std::vector<v1::GetFrame> frames;
  EXPECT_CODE(Get(ns_, std::string(1, 'k'), &frames), StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(frames.empty());
}

TEST_F(MalformedRequestTest, MissingOrShortNamespaceId) {
  const std::string key = NewKey();
  for (const std::string& bad : {std::string(), std::string(5, 'n'), std::string(17, 'n')}) {
    SCOPED_TRACE(bad.size());
    EXPECT_CODE(Lookup(bad, key), StatusCode::INVALID_ARGUMENT);
    v1::ExistsResponse exists;
    EXPECT_CODE(Exists(bad, key, &exists), StatusCode::INVALID_ARGUMENT);
    EXPECT_CODE(Delete(bad, key), StatusCode::INVALID_ARGUMENT);
    std::vector<v1::GetFrame> frames;
    EXPECT_CODE(Get(bad, key, &frames), StatusCode::INVALID_ARGUMENT);
    v1::PutResponse response;
    EXPECT_CODE(Put({Header(bad, key, 4, "abcd")}, &response), StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_FALSE(Present(key));
}

TEST_F(MalformedRequestTest, UnknownNamespaceIsFailedPrecondition) {
  const std::string unknown = NewKey();
  const std::string key = NewKey();
  const grpc::Status lookup = Lookup(unknown, key);
  EXPECT_CODE(lookup, StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(lookup.error_message().find("unknown namespace"), std::string::npos)
      << lookup.error_message();
  v1::ExistsResponse exists;
  EXPECT_CODE(Exists(unknown, key, &exists), StatusCode::FAILED_PRECONDITION);
  EXPECT_CODE(Delete(unknown, key), StatusCode::FAILED_PRECONDITION);
  std::vector<v1::GetFrame> frames;
  EXPECT_CODE(Get(unknown, key, &frames), StatusCode::FAILED_PRECONDITION);
  v1::PutResponse response;
  EXPECT_CODE(Put({Header(unknown, key, 4, "abcd")}, &response), StatusCode::FAILED_PRECONDITION);
}

TEST_F(MalformedRequestTest, InvalidNamespaceSpecIsRejected) {
  Namespace no_model = spec_;
  no_model.model_id.clear();
  Namespace no_chunk = spec_;
  no_chunk.chunk_tokens = 0;
  Namespace bad_rank = spec_;
  bad_rank.tp_rank = 2;
  bad_rank.tp_size = 2;
  for (const Namespace& bad : {no_model, no_chunk, bad_rank}) {
    auto id = RawRegister(*stub_, bad);
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << id.status();
  }
}

TEST_F(MalformedRequestTest, TooManyKeysIsRefused) {
  std::string keys;
  for (int i = 0; i < 65; ++i) keys += NewKey();
  const grpc::Status status = Lookup(ns_, keys);
  EXPECT_TRUE(status.error_code() == StatusCode::INVALID_ARGUMENT ||
              status.error_code() == StatusCode::RESOURCE_EXHAUSTED)
      << status.error_code() << " " << status.error_message();
}

TEST_F(MalformedRequestTest, DataFrameBeforeHeader) {
  v1::PutFrame first = Data("payload without a header");
  first.set_namespace_id(ns_);
  v1::PutResponse response;
  EXPECT_CODE(Put({first}, &response), StatusCode::INVALID_ARGUMENT);
}

TEST_F(MalformedRequestTest, PayloadLargerThanDeclared) {
  const std::string key = NewKey();
  v1::PutResponse response;
  EXPECT_CODE(Put({Header(ns_, key, 100, std::string(200, 'x'))}, &response),
              StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(Present(key));
  // The same overflow spread over two frames.
  EXPECT_CODE(
      Put({Header(ns_, key, 100, std::string(64, 'x')), Data(std::string(100, 'y'))}, &response),
      StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(Present(key));
}

TEST_F(MalformedRequestTest, BadChunkKeyLengthIsInvalid) {
  v1::PutResponse response;
  const grpc::Status status = Put({Header(ns_, std::string(5, 'k'), 4, "abcd")}, &response);
  // Either the whole call or the chunk's own result may carry the error.
  if (status.ok()) {
    ASSERT_EQ(response.results_size(), 1);
    EXPECT_EQ(response.results(0).code(), static_cast<int>(StatusCode::INVALID_ARGUMENT));
  } else {
    EXPECT_CODE(status, StatusCode::INVALID_ARGUMENT);
  }
}

TEST_F(MalformedRequestTest, ChunkLargerThanMaxChunkBytes) {
  const std::string big = NewKey(), small = NewKey();
  std::vector<v1::PutFrame> frames = {Header(ns_, big, 2 * kMaxChunk)};
  for (int i = 0; i < 4; ++i) frames.push_back(Data(std::string(kMaxChunk / 2, 'b')));
  frames.push_back(Header({}, small, 4096, std::string(4096, 's')));
  v1::PutResponse response;
  const grpc::Status status = Put(frames, &response);
  ASSERT_TRUE(status.ok()) << status.error_code() << " " << status.error_message();
  ASSERT_EQ(response.results_size(), 2);
  EXPECT_EQ(response.results(0).code(), static_cast<int>(StatusCode::RESOURCE_EXHAUSTED))
      << response.results(0).message();
  EXPECT_EQ(response.results(1).code(), 0) << response.results(1).message();
  EXPECT_FALSE(Present(big));
  EXPECT_TRUE(Present(small)) << "the stream must stay in sync after a refused chunk";
}

TEST_F(MalformedRequestTest, FrameLargerThanMaxReceiveSize) {
  const std::string key = NewKey();
  v1::PutResponse response;
  EXPECT_CODE(Put({Header(ns_, key, 4 * kMaxFrame, std::string(2 * kMaxFrame, 'f'))}, &response),
              StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_FALSE(Present(key));
}

TEST_F(MalformedRequestTest, StreamEndingMidChunk) {
  const std::string done = NewKey(), cut = NewKey();
  v1::PutResponse response;
  const grpc::Status status = Put({Header(ns_, done, 1000, std::string(1000, 'd')),
                                   Header({}, cut, kMiB), Data(std::string(kMiB / 2, 'c'))},
                                  &response);
  EXPECT_CODE(status, StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(Present(cut));
}

TEST_F(MalformedRequestTest, ChecksumMismatchIsDataLoss) {
  const std::string bad = NewKey(), good = NewKey();
  const std::string payload(70000, 'p');
  const uint64_t sum = XXH3_64bits(payload.data(), payload.size());
  v1::PutFrame bad_frame = Header(ns_, bad, payload.size(), payload);
  bad_frame.mutable_header()->set_checksum(sum ^ 1);
  v1::PutFrame good_frame = Header({}, good, payload.size(), payload);
  good_frame.mutable_header()->set_checksum(sum);
  v1::PutResponse response;
  const grpc::Status status = Put({bad_frame, good_frame}, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.results_size(), 2);
  EXPECT_EQ(response.results(0).code(), static_cast<int>(StatusCode::DATA_LOSS));
  EXPECT_EQ(response.results(1).code(), 0) << response.results(1).message();
  EXPECT_FALSE(Present(bad));
  EXPECT_TRUE(Present(good));

  // Get reports the checksum the daemon holds.
  std::vector<v1::GetFrame> frames;
  ASSERT_TRUE(Get(ns_, good, &frames).ok());
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames[0].code(), 0);
  EXPECT_EQ(frames[0].header().checksum(), sum);
  std::string got;
  for (const v1::GetFrame& f : frames) got += f.data();
  EXPECT_EQ(got, payload);
}

TEST_F(MalformedRequestTest, RawGetOfMissingKeyIsPerChunkNotFound) {
  std::vector<v1::GetFrame> frames;
  const std::string keys = NewKey() + NewKey();
  ASSERT_TRUE(Get(ns_, keys, &frames).ok());
  ASSERT_EQ(frames.size(), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(frames[i].index(), i);
    EXPECT_EQ(frames[i].code(), static_cast<int>(StatusCode::NOT_FOUND));
    EXPECT_TRUE(frames[i].data().empty());
  }
}

}  // namespace
}  // namespace kvstash::testing
