// GrpcTransport end to end against an in-process fake daemon built on the generated
// service: framing of Put and Get, per-chunk codes, connections, deadlines, broken
// streams and re-registration. The fake parses frames with plain protobuf, so these tests
// also pin that the zero-copy frames are ordinary kvstash.v1 messages.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/wire_convert.h"
#include "kvstash/client.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "proto/namespace_spec.h"
#include "xxhash.h"

namespace kvstash {
namespace {

// Thread-safe: all state under mu.
class FakeDaemon final : public v1::KvStash::Service {
 public:
  struct Chunk {
    v1::ChunkHeader header;
    std::string bytes;
  };
  absl::Mutex mu;
  std::set<std::string> known ABSL_GUARDED_BY(mu);
  std::map<std::string, Chunk> chunks ABSL_GUARDED_BY(mu);
  std::set<std::string> peers ABSL_GUARDED_BY(mu);
  int registrations ABSL_GUARDED_BY(mu) = 0;
  int frames_with_ns ABSL_GUARDED_BY(mu) = 0;
  size_t largest_put_payload ABSL_GUARDED_BY(mu) = 0;
  size_t send_frame_bytes ABSL_GUARDED_BY(mu) = 3000;
  grpc::Status get_break ABSL_GUARDED_BY(mu);  // not OK: Get fails after its first frame
  bool put_break ABSL_GUARDED_BY(mu) = false;  // Put fails after its first frame
  bool get_hang ABSL_GUARDED_BY(mu) = false;   // Get waits until cancelled

  grpc::Status RegisterNamespace(grpc::ServerContext* ctx, const v1::RegisterNamespaceRequest* req,
                                 v1::RegisterNamespaceResponse* resp) override {
    absl::MutexLock lock(&mu);
    Namespace ns = wire::NamespaceFromProto(req->spec());
    if (!ns.Validate().ok()) return grpc::Status(grpc::INVALID_ARGUMENT, "bad spec");
    ++registrations;
    resp->set_namespace_id(KeyToBytes(ns.Id()));
    known.insert(resp->namespace_id());
    return grpc::Status::OK;
  }

  grpc::Status Put(grpc::ServerContext* ctx, grpc::ServerReader<v1::PutFrame>* reader,
                   v1::PutResponse* resp) override {
    v1::PutFrame f;
    std::vector<Chunk> got;
    bool first = true;
    while (reader->Read(&f)) {
      absl::MutexLock lock(&mu);
      if (!f.namespace_id().empty()) ++frames_with_ns;
      if (first && known.count(f.namespace_id()) == 0) {
        return grpc::Status(grpc::FAILED_PRECONDITION, "unknown namespace; register first");
      }
      if (first && put_break) return grpc::Status(grpc::ABORTED, "put broken on purpose");
      first = false;
      largest_put_payload = std::max(largest_put_payload, f.data().size());
      if (f.has_header()) got.push_back(Chunk{f.header(), ""});
      if (got.empty()) return grpc::Status(grpc::INVALID_ARGUMENT, "data before header");
      got.back().bytes += f.data();
    }
    absl::MutexLock lock(&mu);
    for (Chunk& c : got) {
      v1::ChunkResult* r = resp->add_results();
      // Like the daemon: checksum 0 asks the server to compute it, others are verified.
      const uint64_t actual = XXH3_64bits(c.bytes.data(), c.bytes.size());
      if (c.bytes.size() != c.header.size_bytes() ||
          (c.header.checksum() != 0 && actual != c.header.checksum())) {
        r->set_code(grpc::DATA_LOSS);
        r->set_message("size or checksum mismatch");
        continue;
      }
      c.header.set_checksum(actual);
      r->set_already_present(chunks.count(c.header.key()) > 0);
      chunks[c.header.key()] = c;
    }
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext* ctx, const v1::GetRequest* req,
                   grpc::ServerWriter<v1::GetFrame>* writer) override {
    absl::MutexLock lock(&mu);
    if (known.count(req->namespace_id()) == 0) {
      return grpc::Status(grpc::FAILED_PRECONDITION, "unknown namespace; register first");
    }
    if (get_hang) {
      while (!ctx->IsCancelled())
        mu.AwaitWithTimeout(absl::Condition::kTrue, absl::Milliseconds(5));
      return grpc::Status(grpc::CANCELLED, "cancelled");
    }
    for (size_t i = 0; i * 16 < req->keys().size(); ++i) {
      std::string key = req->keys().substr(i * 16, 16);
      v1::GetFrame f;
      f.set_index(static_cast<uint32_t>(i));
      auto it = chunks.find(key);
      if (it == chunks.end()) {
        f.set_code(grpc::NOT_FOUND);
        f.mutable_header()->set_key(key);
        writer->Write(f);
        continue;
      }
      *f.mutable_header() = it->second.header;
      const std::string& b = it->second.bytes;
      size_t off = 0;
      do {
        size_t n = std::min(send_frame_bytes, b.size() - off);
        f.set_data(b.substr(off, n));
        writer->Write(f);
        if (!get_break.ok()) return get_break;
        off += n;
        f.Clear();
      } while (off < b.size());
    }
    return grpc::Status::OK;
  }

  // Both answer one more key than was asked about, as a broken daemon would.
  grpc::Status Lookup(grpc::ServerContext*, const v1::LookupRequest* req,
                      v1::LookupResponse* resp) override {
    const uint32_t n = static_cast<uint32_t>(req->keys().size() / 16) + 1;
    resp->set_hit_count(n);
    resp->set_tiers(std::string(n, static_cast<char>(v1::TIER_DRAM)));
    return grpc::Status::OK;
  }
  grpc::Status Exists(grpc::ServerContext*, const v1::KeysRequest* req,
                      v1::ExistsResponse* resp) override {
    resp->set_present(std::string(req->keys().size() / 16 + 1, '\0'));
    return grpc::Status::OK;
  }

  grpc::Status Health(grpc::ServerContext* ctx, const v1::HealthRequest*,
                      v1::HealthResponse* resp) override {
    absl::MutexLock lock(&mu);
    peers.insert(ctx->peer());
    resp->set_state(v1::HealthResponse::SERVING);
    resp->set_version("fake-1");
    resp->set_uptime_ms(42);
    return grpc::Status::OK;
  }
};

class GrpcTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.SetMaxReceiveMessageSize(64 << 20);
    b.RegisterService(&daemon_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_->Shutdown(); }

  std::unique_ptr<Client> Connect(ClientOptions o = {}) {
    auto c = Client::Connect(absl::StrCat("grpc://127.0.0.1:", port_), o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  static Namespace Spec() {
    Namespace ns;
    ns.model_id = "fake-model";
    return ns;
  }
  static Key128 KeyN(int n) {
    Key128 k{};
    k[0] = static_cast<uint8_t>(n);
    k[15] = 0xAB;
    return k;
  }
  static std::string Bytes(size_t n, int seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + i / 251) & 0xff);
    return s;
  }

  FakeDaemon daemon_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(GrpcTransportTest, PutGetRoundTripAcrossFrameBoundaries) {
  ClientOptions o;
  o.frame_bytes = 1024;
  o.verify_checksums = true;
  auto client = Connect(o);
  ASSERT_NE(client, nullptr);
  auto ns = client->OpenNamespace(Spec());
  ASSERT_TRUE(ns.ok()) << ns.status();
  const size_t sizes[] = {1, 1023, 1024, 1025, 3000, 3001, 10000, (1 << 20) + 7};
  std::vector<std::string> payloads;
  std::vector<PutItem> puts;
  for (size_t i = 0; i < std::size(sizes); ++i) {
    payloads.push_back(Bytes(sizes[i], static_cast<int>(i)));
  }
  for (size_t i = 0; i < payloads.size(); ++i) {
    PutItem p;
    p.key = KeyN(static_cast<int>(i));
    p.data = payloads[i].data();
    p.size = payloads[i].size();
    p.tokens = static_cast<uint32_t>(i + 1);
    p.format = 7;
    puts.push_back(p);
  }
  ASSERT_TRUE(client->Put(*ns, absl::MakeSpan(puts)).ok());
  for (const PutItem& p : puts) {
    EXPECT_TRUE(p.status.ok()) << p.status;
    EXPECT_FALSE(p.already_present);
  }
  {
    absl::MutexLock lock(&daemon_.mu);
    EXPECT_EQ(daemon_.frames_with_ns, 1);
    EXPECT_EQ(daemon_.largest_put_payload, 1024u);
  }
  std::vector<std::string> bufs(payloads.size());
  std::vector<GetItem> gets(payloads.size());
  for (size_t i = 0; i < gets.size(); ++i) {
    bufs[i].assign(payloads[i].size() + 5, '\xee');
    gets[i].key = KeyN(static_cast<int>(i));
    gets[i].data = bufs[i].data();
    gets[i].capacity = bufs[i].size();
  }
  ASSERT_TRUE(client->Get(*ns, absl::MakeSpan(gets)).ok());
  for (size_t i = 0; i < gets.size(); ++i) {
    ASSERT_TRUE(gets[i].status.ok()) << i << ": " << gets[i].status;
    EXPECT_EQ(gets[i].size, payloads[i].size());
    EXPECT_EQ(bufs[i].substr(0, gets[i].size), payloads[i]) << "chunk " << i;
    EXPECT_EQ(bufs[i].substr(gets[i].size), std::string(5, '\xee'));  // no overrun
    EXPECT_EQ(gets[i].tokens, i + 1);
    EXPECT_EQ(gets[i].format, 7u);
    EXPECT_EQ(gets[i].checksum, XXH3_64bits(payloads[i].data(), payloads[i].size()));
  }
  ASSERT_TRUE(client->Put(*ns, absl::MakeSpan(puts).subspan(0, 1)).ok());
  EXPECT_TRUE(puts[0].already_present);
}

TEST_F(GrpcTransportTest, PerChunkNotFoundAndTooSmallBuffer) {
  auto client = Connect();
  auto ns = client->OpenNamespace(Spec());
  ASSERT_TRUE(ns.ok());
  std::string big = Bytes(10000, 1), small = Bytes(100, 2);
  std::vector<PutItem> puts(2);
  puts[0] = {KeyN(1), big.data(), big.size()};
  puts[1] = {KeyN(2), small.data(), small.size()};
  ASSERT_TRUE(client->Put(*ns, absl::MakeSpan(puts)).ok());
  std::string b0(5000, '\0'), b2(100, '\0');
  std::vector<GetItem> gets(3);
  gets[0] = {KeyN(1), b0.data(), b0.size()};  // too small: skipped
  gets[1] = {KeyN(9), nullptr, 0};            // absent
  gets[2] = {KeyN(2), b2.data(), b2.size()};  // must still arrive intact
  ASSERT_TRUE(client->Get(*ns, absl::MakeSpan(gets)).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(gets[0].status)) << gets[0].status;
  EXPECT_EQ(gets[0].size, big.size());
  EXPECT_EQ(b0, std::string(5000, '\0'));
  EXPECT_TRUE(absl::IsNotFound(gets[1].status)) << gets[1].status;
  ASSERT_TRUE(gets[2].status.ok()) << gets[2].status;
  EXPECT_EQ(b2, small);
}

TEST_F(GrpcTransportTest, RepliesContradictingTheRequestAreInternal) {
  auto client = Connect();
  auto ns = client->OpenNamespace(Spec());
  ASSERT_TRUE(ns.ok());
  const std::vector<Key128> keys = {KeyN(1), KeyN(2)};
  absl::Status lookup = client->Lookup(*ns, keys).status();
  EXPECT_TRUE(absl::IsInternal(lookup)) << lookup;
  EXPECT_EQ(lookup.message(), "LookupResponse: 3 hits, 3 tiers for 2 keys");
  absl::Status exists = client->Exists(*ns, keys).status();
  EXPECT_TRUE(absl::IsInternal(exists)) << exists;
  EXPECT_EQ(exists.message(), "ExistsResponse: 3 answers for 2 keys");
}

TEST_F(GrpcTransportTest, ConnectionsAreDistinct) {
  ClientOptions o;
  o.connections = 3;
  auto client = Connect(o);
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(client->Health().ok());
  absl::MutexLock lock(&daemon_.mu);
  EXPECT_EQ(daemon_.peers.size(), 3u);  // one client port per connection
}

TEST_F(GrpcTransportTest, HealthFields) {
  auto client = Connect();
  auto h = client->Health();
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->serving);
  EXPECT_EQ(h->version, "fake-1");
  EXPECT_EQ(h->uptime_ms, 42u);
}

TEST_F(GrpcTransportTest, BrokenStreamsFailTheCall) {
  auto client = Connect();
  auto ns = client->OpenNamespace(Spec());
  ASSERT_TRUE(ns.ok());
  std::string payload = Bytes(8 << 20, 3);
  std::vector<PutItem> puts(1);
  puts[0] = {KeyN(1), payload.data(), payload.size()};
  ASSERT_TRUE(client->Put(*ns, absl::MakeSpan(puts)).ok());
  {
    absl::MutexLock lock(&daemon_.mu);
    daemon_.get_break = grpc::Status(grpc::ABORTED, "stream cut");
    daemon_.put_break = true;
  }
  std::string buf(payload.size(), '\0');
  std::vector<GetItem> gets(1);
  gets[0] = {KeyN(1), buf.data(), buf.size()};
  absl::Status s = client->Get(*ns, absl::MakeSpan(gets));
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_FALSE(gets[0].status.ok());
  // The daemon gives up after the first frame while megabytes are still queued.
  s = client->Put(*ns, absl::MakeSpan(puts));
  EXPECT_TRUE(absl::IsAborted(s)) << s;
}

TEST_F(GrpcTransportTest, DeadlineCutsAHangingGet) {
  ClientOptions o;
  o.deadline_ms = 300;
  auto client = Connect(o);
  auto ns = client->OpenNamespace(Spec());
  ASSERT_TRUE(ns.ok());
  {
    absl::MutexLock lock(&daemon_.mu);
    daemon_.get_hang = true;
  }
  std::vector<GetItem> gets(1);
  absl::Status s = client->Get(*ns, absl::MakeSpan(gets));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
}

TEST_F(GrpcTransportTest, ForgottenNamespaceIsRegisteredAgain) {
  auto client = Connect();
  auto ns = client->OpenNamespace(Spec());
  ASSERT_TRUE(ns.ok());
  {
    absl::MutexLock lock(&daemon_.mu);
    daemon_.known.clear();
  }
  std::string payload = Bytes(5000, 4);
  std::vector<PutItem> puts(1);
  puts[0] = {KeyN(1), payload.data(), payload.size()};
  ASSERT_TRUE(client->Put(*ns, absl::MakeSpan(puts)).ok());
  EXPECT_TRUE(puts[0].status.ok());
  absl::MutexLock lock(&daemon_.mu);
  EXPECT_EQ(daemon_.registrations, 2);
}

TEST_F(GrpcTransportTest, ConcurrentAsyncCalls) {
  ClientOptions o;
  o.connections = 2;
  o.async_threads = 4;
  auto client = Connect(o);
  auto ns = client->OpenNamespace(Spec());
  ASSERT_TRUE(ns.ok());
  constexpr int kCalls = 16;
  std::vector<std::string> payloads;
  for (int i = 0; i < kCalls; ++i) payloads.push_back(Bytes(200000 + i, i));
  std::vector<PutItem> puts(kCalls);
  std::vector<std::future<absl::Status>> fs;
  for (int i = 0; i < kCalls; ++i) {
    puts[i] = {KeyN(i), payloads[i].data(), payloads[i].size()};
    fs.push_back(client->PutAsync(*ns, absl::MakeSpan(&puts[i], 1)));
  }
  for (auto& f : fs) ASSERT_TRUE(f.get().ok());
  fs.clear();
  std::vector<std::string> bufs(kCalls, std::string(300000, '\0'));
  std::vector<GetItem> gets(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    gets[i] = {KeyN(i), bufs[i].data(), bufs[i].size()};
    fs.push_back(client->GetAsync(*ns, absl::MakeSpan(&gets[i], 1)));
  }
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(fs[i].get().ok());
    ASSERT_TRUE(gets[i].status.ok());
    EXPECT_EQ(bufs[i].substr(0, gets[i].size), payloads[i]);
  }
}

}  // namespace
}  // namespace kvstash
