// The KvStash service in-process: a real store behind a real gRPC server on 127.0.0.1:0,
// called through the generated synchronous stub (plain protobuf frames, as any gRPC client
// would send them), including malformed streams.
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "server/config_file.h"
#include "server/server.h"

namespace kvstash::server {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;

Key128 TestKey(uint32_t i) {
  Key128 k{};
  std::memcpy(k.data(), &i, sizeof(i));
  k[15] = 0x5a;
  return k;
}

std::string Payload(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

// One chunk to put: its key, payload and how many bytes each frame carries.
struct PutChunk {
  Key128 key;
  std::string data;
  uint64_t frame_bytes = kMiB;
  uint64_t checksum = 0;
};

// One chunk of a Get reply, reassembled.
struct Fetched {
  uint32_t index = 0;
  int code = 0;
  v1::ChunkHeader header;
  std::string data;
};

class GrpcServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<ServerConfig> config = ParseConfig("", {{"server.grpc_listen", "127.0.0.1:0"},
                                                           {"server.max_keys_per_request", "1000"},
                                                           {"storage.max_chunk_bytes", "8MiB"},
                                                           {"storage.dram.capacity_bytes", "64MiB"},
                                                           {"storage.dram.huge_pages", "off"},
                                                           {"storage.nvme.enabled", "false"},
                                                           {"metrics.listen", "127.0.0.1:0"},
                                                           {"ucx.enabled", "false"},
                                                           {"log.level", "error"}});
    ASSERT_TRUE(config.ok()) << config.status();
    log_ = std::make_unique<Logger>(config->log);
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Create(*config, log_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel(server_->connect_address(), grpc::InsecureChannelCredentials());
    stub_ = v1::KvStash::NewStub(channel_);
    ns_ = Register(Spec("model-a"));
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(5));
  }

  // Keeps gRPC initialised across tests: when the last channel and server go away, gRPC's
  // library shutdown joins an executor thread that may sleep on a timer for seconds.
  static void SetUpTestSuite() { grpc_init(); }

  static v1::NamespaceSpec Spec(const std::string& model) {
    v1::NamespaceSpec spec;
    spec.set_tenant("default");
    spec.set_model_id(model);
    spec.set_dtype("fp16");
    spec.set_kv_layout("kvstash.layer_kv_token.v1");
    spec.set_num_layers(2);
    spec.set_kv_heads(2);
    spec.set_head_dim(64);
    spec.set_tp_size(1);
    spec.set_chunk_tokens(16);
    spec.set_hash_algo(1);
    return spec;
  }

  std::string Register(const v1::NamespaceSpec& spec) {
    grpc::ClientContext ctx;
    v1::RegisterNamespaceRequest req;
    *req.mutable_spec() = spec;
    v1::RegisterNamespaceResponse resp;
    grpc::Status s = stub_->RegisterNamespace(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.namespace_id();
  }

  // Sends `frames` as one Put call.
  grpc::Status PutFrames(const std::vector<v1::PutFrame>& frames, v1::PutResponse* resp) {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientWriter<v1::PutFrame>> writer = stub_->Put(&ctx, resp);
    for (const v1::PutFrame& f : frames) {
      if (!writer->Write(f)) break;  // the server ended the call early
    }
    writer->WritesDone();
    return writer->Finish();
  }

  // Frames of `chunks` in `ns`, each chunk's header in the frame with its first bytes.
  static std::vector<v1::PutFrame> FramesOf(const std::string& ns,
                                            const std::vector<PutChunk>& chunks) {
    std::vector<v1::PutFrame> frames;
    for (const PutChunk& c : chunks) {
      for (uint64_t off = 0; off < c.data.size(); off += c.frame_bytes) {
        v1::PutFrame f;
        if (frames.empty()) f.set_namespace_id(ns);
        if (off == 0) {
          f.mutable_header()->set_key(KeyToBytes(c.key));
          f.mutable_header()->set_size_bytes(c.data.size());
          f.mutable_header()->set_tokens(16);
          f.mutable_header()->set_format(7);
          f.mutable_header()->set_checksum(c.checksum);
        }
        f.set_data(c.data.substr(off, c.frame_bytes));
        frames.push_back(std::move(f));
      }
    }
    return frames;
  }

  v1::PutResponse PutOk(const std::vector<PutChunk>& chunks) {
    v1::PutResponse resp;
    grpc::Status s = PutFrames(FramesOf(ns_, chunks), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  grpc::Status Fetch(const std::string& ns, const std::vector<Key128>& keys,
                     std::vector<Fetched>* out, uint64_t lease_id = 0) {
    v1::GetRequest req;
    req.set_namespace_id(ns);
    for (const Key128& k : keys) req.mutable_keys()->append(KeyToBytes(k));
    req.set_lease_id(lease_id);
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<v1::GetFrame>> reader = stub_->Get(&ctx, req);
    v1::GetFrame frame;
    while (reader->Read(&frame)) {
      if (frame.has_header()) {
        out->push_back({frame.index(), frame.code(), frame.header(), ""});
      }
      EXPECT_FALSE(out->empty()) << "data frame before any head frame";
      if (!out->empty()) out->back().data += frame.data();
    }
    return reader->Finish();
  }

  std::string ExistsBytes(const std::vector<Key128>& keys) {
    v1::KeysRequest req;
    req.set_namespace_id(ns_);
    for (const Key128& k : keys) req.mutable_keys()->append(KeyToBytes(k));
    grpc::ClientContext ctx;
    v1::ExistsResponse resp;
    EXPECT_TRUE(stub_->Exists(&ctx, req, &resp).ok());
    return resp.present();
  }

  std::unique_ptr<Logger> log_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::KvStash::Stub> stub_;
  std::string ns_;
};

TEST_F(GrpcServiceTest, HealthReportsServing) {
  grpc::ClientContext ctx;
  v1::HealthResponse resp;
  ASSERT_TRUE(stub_->Health(&ctx, v1::HealthRequest(), &resp).ok());
  EXPECT_EQ(resp.state(), v1::HealthResponse::SERVING);
  EXPECT_FALSE(resp.version().empty());
}

TEST_F(GrpcServiceTest, SecondServerOnTheSamePortFailsToStart) {
  absl::StatusOr<ServerConfig> config =
      ParseConfig("", {{"server.grpc_listen", server_->connect_address(), /*literal=*/true},
                       {"storage.dram.capacity_bytes", "4MiB"},
                       {"storage.dram.huge_pages", "off"},
                       {"storage.nvme.enabled", "false"},
                       {"metrics.listen", "127.0.0.1:0"},
                       {"ucx.enabled", "false"}});
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::unique_ptr<Server>> second = Server::Create(*config, log_.get());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->Start().code(), absl::StatusCode::kUnavailable);
}

TEST_F(GrpcServiceTest, RegisterNamespaceReturnsTheCanonicalId) {
  EXPECT_EQ(ns_, KeyToBytes(NamespaceFromProto(Spec("model-a")).Id()));
  v1::NamespaceSpec bad = Spec("");
  grpc::ClientContext ctx;
  v1::RegisterNamespaceRequest req;
  *req.mutable_spec() = bad;
  v1::RegisterNamespaceResponse resp;
  grpc::Status s = stub_->RegisterNamespace(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("model_id"));
}

TEST_F(GrpcServiceTest, PutThenGetRoundTripsChunksOfAnySize) {
  std::vector<PutChunk> chunks = {
      {TestKey(1), Payload(3 * kMiB + 100, 1), kMiB},  // several frames, odd tail
      {TestKey(2), Payload(1000, 2), 1000},            // one small frame
      {TestKey(3), Payload(2 * kMiB, 3), 700 * 1024},  // frames not page aligned
      {TestKey(4), Payload(1, 4), 1},
  };
  v1::PutResponse put = PutOk(chunks);
  ASSERT_EQ(put.results_size(), 4);
  for (const v1::ChunkResult& r : put.results()) {
    EXPECT_EQ(r.code(), 0) << r.message();
    EXPECT_FALSE(r.already_present());
  }
  std::vector<Fetched> got;
  ASSERT_TRUE(Fetch(ns_, {TestKey(1), TestKey(9), TestKey(2), TestKey(3), TestKey(4)}, &got).ok());
  ASSERT_EQ(got.size(), 5u);
  const int expected_chunk[] = {0, -1, 1, 2, 3};
  for (uint32_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].index, i);
    EXPECT_EQ(got[i].header.key(),
              i == 1 ? KeyToBytes(TestKey(9)) : KeyToBytes(chunks[expected_chunk[i]].key));
    if (expected_chunk[i] < 0) {
      EXPECT_EQ(got[i].code, static_cast<int>(grpc::StatusCode::NOT_FOUND));
      EXPECT_TRUE(got[i].data.empty());
      continue;
    }
    const PutChunk& c = chunks[expected_chunk[i]];
    EXPECT_EQ(got[i].code, 0);
    EXPECT_EQ(got[i].header.size_bytes(), c.data.size());
    EXPECT_EQ(got[i].header.tokens(), 16u);
    EXPECT_EQ(got[i].header.format(), 7u);
    EXPECT_NE(got[i].header.checksum(), 0u);  // computed by the server
    EXPECT_TRUE(got[i].data == c.data) << "payload of chunk " << i << " differs";
  }
}

TEST_F(GrpcServiceTest, RepeatedPutIsAcknowledgedAsAlreadyPresent) {
  std::vector<PutChunk> chunks = {{TestKey(1), Payload(5000, 1), 4096}};
  ASSERT_FALSE(PutOk(chunks).results(0).already_present());
  v1::PutResponse again = PutOk(chunks);
  ASSERT_EQ(again.results_size(), 1);
  EXPECT_EQ(again.results(0).code(), 0);
  EXPECT_TRUE(again.results(0).already_present());
}

TEST_F(GrpcServiceTest, PerChunkErrorsDoNotEndTheStream) {
  std::string good = Payload(4096, 5);
  std::vector<PutChunk> chunks = {
      {TestKey(1), Payload(9 * kMiB, 1), kMiB},                  // above max_chunk_bytes
      {TestKey(2), Payload(4096, 2), 4096, /*checksum=*/12345},  // wrong checksum
      {TestKey(3), good, 1000},
  };
  v1::PutResponse put = PutOk(chunks);
  ASSERT_EQ(put.results_size(), 3);
  EXPECT_EQ(put.results(0).code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_EQ(put.results(1).code(), static_cast<int>(grpc::StatusCode::DATA_LOSS));
  EXPECT_EQ(put.results(2).code(), 0);
  EXPECT_EQ(ExistsBytes({TestKey(1), TestKey(2), TestKey(3)}),
            std::string("\0\0\2", 3));  // only the good chunk, in DRAM
}

TEST_F(GrpcServiceTest, MalformedPutStreamsFailTheCallAndLeaveNoTrace) {
  const std::string data = Payload(8192, 1);
  auto header_frame = [&](const std::string& key, uint64_t size, size_t first_bytes) {
    v1::PutFrame f;
    f.set_namespace_id(ns_);
    f.mutable_header()->set_key(key);
    f.mutable_header()->set_size_bytes(size);
    f.set_data(data.substr(0, first_bytes));
    return f;
  };
  auto data_frame = [&](size_t n) {
    v1::PutFrame f;
    f.set_data(data.substr(0, n));
    return f;
  };
  const std::string key = KeyToBytes(TestKey(1));
  struct Case {
    const char* name;
    std::vector<v1::PutFrame> frames;
    grpc::StatusCode code;
    const char* message;
  };
  v1::PutFrame data_first = data_frame(10);
  data_first.set_namespace_id(ns_);
  v1::PutFrame no_ns = header_frame(key, 100, 100);
  no_ns.clear_namespace_id();
  v1::PutFrame short_parent = header_frame(key, 100, 100);
  short_parent.mutable_header()->mutable_hints()->set_parent_key("short");
  v1::PutFrame bad_priority = header_frame(key, 100, 100);
  bad_priority.mutable_header()->mutable_hints()->set_priority(static_cast<v1::Priority>(1000));
  const Case cases[] = {
      {"data before header", {data_first}, grpc::StatusCode::INVALID_ARGUMENT, "no header"},
      {"payload past size",
       {header_frame(key, 100, 50), data_frame(51)},
       grpc::StatusCode::INVALID_ARGUMENT,
       "only 50 remain"},
      {"short key",
       {header_frame("short", 100, 100)},
       grpc::StatusCode::INVALID_ARGUMENT,
       "key must be 16 bytes"},
      {"zero size", {header_frame(key, 0, 0)}, grpc::StatusCode::INVALID_ARGUMENT, "size_bytes"},
      {"ends mid-chunk",
       {header_frame(key, 8192, 4000)},
       grpc::StatusCode::INVALID_ARGUMENT,
       "stream ended"},
      {"header inside chunk",
       {header_frame(key, 8192, 10), header_frame(key, 10, 10)},
       grpc::StatusCode::INVALID_ARGUMENT,
       "still missing"},
      {"no namespace", {no_ns}, grpc::StatusCode::INVALID_ARGUMENT, "namespace_id"},
      {"short parent key",
       {short_parent},
       grpc::StatusCode::INVALID_ARGUMENT,
       "hints.parent_key must be 16 bytes"},
      {"unknown priority",
       {bad_priority},
       grpc::StatusCode::INVALID_ARGUMENT,
       "hints.priority 1000"},
  };
  for (const Case& c : cases) {
    v1::PutResponse resp;
    grpc::Status s = PutFrames(c.frames, &resp);
    EXPECT_EQ(s.error_code(), c.code) << c.name << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.message)) << c.name;
    EXPECT_EQ(ExistsBytes({TestKey(1)}), std::string(1, '\0')) << c.name;
  }
  // The same key can still be stored afterwards.
  EXPECT_EQ(PutOk({{TestKey(1), data, 4096}}).results(0).code(), 0);
}

TEST_F(GrpcServiceTest, UnknownNamespaceIsAFailedPrecondition) {
  std::string unknown = KeyToBytes(NamespaceFromProto(Spec("never-registered")).Id());
  v1::PutResponse resp;
  grpc::Status s = PutFrames(FramesOf(unknown, {{TestKey(1), "abc", 3}}), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("call RegisterNamespace first"));
  std::vector<Fetched> got;
  EXPECT_EQ(Fetch(unknown, {TestKey(1)}, &got).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  grpc::ClientContext ctx;
  v1::LookupRequest req;
  req.set_namespace_id(unknown);
  v1::LookupResponse lookup;
  EXPECT_EQ(stub_->Lookup(&ctx, req, &lookup).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(GrpcServiceTest, OversizeFramesAreRefused) {
  // Above max_frame_bytes but within gRPC's message limit: refused by the service.
  std::vector<PutChunk> big = {{TestKey(1), Payload(4 * kMiB + 1000, 1), 4 * kMiB + 1000}};
  v1::PutResponse resp;
  grpc::Status s = PutFrames(FramesOf(ns_, big), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  // Above the message limit itself: refused by gRPC before the service sees it.
  big = {{TestKey(1), Payload(5 * kMiB, 1), 5 * kMiB}};
  s = PutFrames(FramesOf(ns_, big), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_EQ(ExistsBytes({TestKey(1)}), std::string(1, '\0'));
}

TEST_F(GrpcServiceTest, LookupCountsLeadingHitsAndLeases) {
  PutOk({{TestKey(1), "a", 1}, {TestKey(2), "b", 1}, {TestKey(4), "d", 1}});
  v1::LookupRequest req;
  req.set_namespace_id(ns_);
  for (uint32_t i : {1, 2, 3, 4}) req.mutable_keys()->append(KeyToBytes(TestKey(i)));
  req.set_lease_ms(5000);
  grpc::ClientContext ctx;
  v1::LookupResponse resp;
  ASSERT_TRUE(stub_->Lookup(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.hit_count(), 2u);
  EXPECT_EQ(resp.tiers(), std::string("\2\2"));
  EXPECT_NE(resp.lease_id(), 0u);
  EXPECT_GT(resp.lease_expires_unix_ms(), 0u);
  std::vector<Fetched> got;
  ASSERT_TRUE(Fetch(ns_, {TestKey(1), TestKey(2)}, &got, resp.lease_id()).ok());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].data, "b");
}

TEST_F(GrpcServiceTest, KeyListsAreValidated) {
  v1::LookupRequest req;
  req.set_namespace_id(ns_);
  req.set_keys(std::string(17, 'k'));
  grpc::ClientContext ctx1;
  v1::LookupResponse resp;
  EXPECT_EQ(stub_->Lookup(&ctx1, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req.set_keys(std::string(16 * 1001, 'k'));  // max_keys_per_request is 1000 here
  grpc::ClientContext ctx2;
  grpc::Status s = stub_->Lookup(&ctx2, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("max_keys_per_request"));
  req.set_namespace_id("");
  req.set_keys("");
  grpc::ClientContext ctx3;
  EXPECT_EQ(stub_->Lookup(&ctx3, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  std::vector<Fetched> got;
  v1::GetRequest get;
  EXPECT_TRUE(Fetch(ns_, {}, &got).ok());
  EXPECT_TRUE(got.empty());
}

TEST_F(GrpcServiceTest, ExistsAndDelete) {
  PutOk({{TestKey(1), "a", 1}, {TestKey(2), "b", 1}});
  EXPECT_EQ(ExistsBytes({TestKey(1), TestKey(3), TestKey(2)}), std::string("\2\0\2", 3));
  v1::KeysRequest req;
  req.set_namespace_id(ns_);
  req.set_keys(KeyToBytes(TestKey(1)) + KeyToBytes(TestKey(3)));
  grpc::ClientContext ctx;
  v1::DeleteResponse resp;
  ASSERT_TRUE(stub_->Delete(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.deleted(), 1u);
  EXPECT_EQ(ExistsBytes({TestKey(1), TestKey(2)}), std::string("\0\2", 2));
}

TEST_F(GrpcServiceTest, StatsCoverTotalsTiersAndNamespaces) {
  std::string other = Register(Spec("model-b"));
  PutOk({{TestKey(1), Payload(3000, 1), 3000}, {TestKey(2), Payload(5000, 2), 5000}});
  grpc::ClientContext ctx;
  v1::StatsResponse all;
  ASSERT_TRUE(stub_->Stats(&ctx, v1::StatsRequest(), &all).ok());
  EXPECT_EQ(all.total().chunks(), 2u);
  EXPECT_EQ(all.total().bytes(), 8000u);
  ASSERT_GE(all.tiers_size(), 1);
  EXPECT_EQ(all.tiers(0).tier(), v1::TIER_DRAM);
  EXPECT_EQ(all.tiers(0).capacity_bytes(), 64 * kMiB);
  ASSERT_EQ(all.namespaces_size(), 2);
  v1::StatsRequest one_req;
  one_req.set_namespace_id(ns_);
  grpc::ClientContext ctx2;
  v1::StatsResponse one;
  ASSERT_TRUE(stub_->Stats(&ctx2, one_req, &one).ok());
  ASSERT_EQ(one.namespaces_size(), 1);
  EXPECT_EQ(one.namespaces(0).namespace_id(), ns_);
  EXPECT_EQ(one.namespaces(0).spec().model_id(), "model-a");
  EXPECT_EQ(one.namespaces(0).counters().chunks(), 2u);
  EXPECT_EQ(one.namespaces(0).counters().puts(), 2u);
  one_req.set_namespace_id(std::string(16, 'x'));
  grpc::ClientContext ctx3;
  EXPECT_EQ(stub_->Stats(&ctx3, one_req, &one).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(GrpcServiceTest, CancelledPutLeavesNoTrace) {
  {
    grpc::ClientContext ctx;
    v1::PutResponse resp;
    std::unique_ptr<grpc::ClientWriter<v1::PutFrame>> writer = stub_->Put(&ctx, &resp);
    std::vector<v1::PutFrame> frames = FramesOf(ns_, {{TestKey(1), Payload(2 * kMiB, 1), kMiB}});
    ASSERT_TRUE(writer->Write(frames[0]));
    ctx.TryCancel();
    EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_EQ(ExistsBytes({TestKey(1)}), std::string(1, '\0'));
  // The dropped reservation does not block a later put of the key.
  v1::PutResponse again = PutOk({{TestKey(1), Payload(2 * kMiB, 1), kMiB}});
  EXPECT_EQ(again.results(0).code(), 0);
  EXPECT_FALSE(again.results(0).already_present());
}

TEST_F(GrpcServiceTest, ChunkDeletedDuringGetIsStillSentWhole) {
  const std::string data = Payload(6 * kMiB, 9);
  PutOk({{TestKey(1), data, kMiB}});
  v1::GetRequest req;
  req.set_namespace_id(ns_);
  req.set_keys(KeyToBytes(TestKey(1)));
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<v1::GetFrame>> reader = stub_->Get(&ctx, req);
  v1::GetFrame frame;
  ASSERT_TRUE(reader->Read(&frame));
  ASSERT_EQ(frame.code(), 0);
  std::string got = frame.data();
  v1::KeysRequest del;
  del.set_namespace_id(ns_);
  del.set_keys(KeyToBytes(TestKey(1)));
  grpc::ClientContext del_ctx;
  v1::DeleteResponse deleted;
  ASSERT_TRUE(stub_->Delete(&del_ctx, del, &deleted).ok());
  EXPECT_EQ(deleted.deleted(), 1u);
  // Reuse the freed space while the rest of the chunk is still being sent.
  PutOk({{TestKey(2), Payload(6 * kMiB, 10), kMiB}});
  while (reader->Read(&frame)) got += frame.data();
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_TRUE(got == data) << "payload changed under the reader";
}

TEST_F(GrpcServiceTest, ConcurrentPutsAndGets) {
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (uint32_t i = 0; i < 10; ++i) {
        const uint32_t id = t * 100 + i;
        const std::string data = Payload(100000 + id, id);
        PutOk({{TestKey(id), data, 64 * 1024}});
        std::vector<Fetched> got;
        ASSERT_TRUE(Fetch(ns_, {TestKey(id)}, &got).ok());
        ASSERT_EQ(got.size(), 1u);
        EXPECT_TRUE(got[0].data == data) << "chunk " << id;
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST_F(GrpcServiceTest, ShutdownWaitsForTheStreamInFlight) {
  grpc::ClientContext ctx;
  v1::PutResponse resp;
  std::unique_ptr<grpc::ClientWriter<v1::PutFrame>> writer = stub_->Put(&ctx, &resp);
  std::vector<v1::PutFrame> frames = FramesOf(ns_, {{TestKey(1), Payload(2 * kMiB, 1), kMiB}});
  ASSERT_TRUE(writer->Write(frames[0]));
  std::thread stopper([this] { server_->Shutdown(absl::Seconds(30)); });
  // The call started before shutdown completes normally.
  ASSERT_TRUE(writer->Write(frames[1]));
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  stopper.join();
  EXPECT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.results_size(), 1);
  EXPECT_EQ(resp.results(0).code(), 0);
  // New calls are refused once the server is down.
  grpc::ClientContext ctx2;
  v1::HealthResponse health;
  ctx2.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  EXPECT_FALSE(stub_->Health(&ctx2, v1::HealthRequest(), &health).ok());
}

}  // namespace
}  // namespace kvstash::server
