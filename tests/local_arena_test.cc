// The local arena socket beside server.local_socket (docs/protocol.md, "Local arena"): a
// unix:// client reads hits straight from the daemon's arena and writes puts straight into
// it, one copy per byte, with misses, chunks too large for their buffer, repeats and the
// rest answered as over gRPC; a client that vanishes holding chunks or reservations gives
// them back; a chunk written wrong is refused; malformed messages end only their own
// connection; a client that outlives its daemon maps the next daemon's arena, never
// reading the old one's bytes. The trusted-principal rule runs in auth_test.cc, the other
// network namespace in local_socket_test.cc.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/unix_socket.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "proto/local_wire.h"
#include "tests/daemon_process.h"
#include "tests/metrics_test_util.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

using wire::local::Op;

const char kDirectOut[] =
    "kvstash_transport_direct_bytes_total{transport=\"local\",direction=\"out\"}";
const char kDirectIn[] =
    "kvstash_transport_direct_bytes_total{transport=\"local\",direction=\"in\"}";
const char kHeld[] = "kvstash_arena_held_bytes{transport=\"local\"}";

absl::StatusOr<std::unique_ptr<DaemonProcess>> StartDaemon(const std::string& socket = "") {
  DaemonOptions options;
  options.local_socket = socket.empty();
  if (!socket.empty()) options.set.push_back("server.local_socket=" + socket);
  options.set.push_back("storage.dram.capacity_bytes=64MiB");
  return DaemonProcess::Start(options);
}

// Parses a Get reply of one item, shown to `item` when given: the whole call's status, or
// INTERNAL when the reply does not parse.
absl::Status ParseOne(
    const std::string& reply,
    const std::function<void(const wire::local::ItemReply&, absl::string_view)>& item = {}) {
  absl::Status call;
  const absl::Status parsed = wire::local::ParseGetReply(
      reply, 1,
      [&](uint32_t, const wire::local::ItemReply& r, absl::string_view runs) {
        if (item) item(r, runs);
      },
      &call);
  return parsed.ok() ? call : parsed;
}

// Parses a Put or Commit reply of one item, shown to `item` when given; as ParseOne.
absl::Status ParseOnePut(
    const std::string& reply,
    const std::function<void(const wire::local::PutItemReply&, absl::string_view)>& item = {}) {
  absl::Status call;
  const absl::Status parsed = wire::local::ParsePutReply(
      reply, 1,
      [&](uint32_t, const wire::local::PutItemReply& r, absl::string_view message,
          absl::string_view runs) {
        if (item) item(r, r.code == 0 ? runs : message);
      },
      &call);
  return parsed.ok() ? call : parsed;
}

// Mappings of UCX's POSIX shared memory in this process (the daemons' arenas).
int ArenaMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    n += line.find("ucx_shm_posix") != std::string::npos;
  }
  return n;
}

double Metric(const DaemonProcess& daemon, const std::string& series) {
  absl::StatusOr<double> v = MetricValue(daemon, series);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : -1;
}

// Waits until `series` reads `want` (the daemon notices a closed connection on its own).
bool MetricReaches(const DaemonProcess& daemon, const std::string& series, double want) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    if (Metric(daemon, series) == want) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

// The wire protocol spoken by hand.
class RawArena {
 public:
  explicit RawArena(const DaemonProcess& daemon)
      : fd_(ConnectUnix(ArenaSocketPath(daemon.ready().local))) {
    EXPECT_GE(fd_, 0) << strerror(errno);
    timeval tv{10, 0};
    (void)setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)fcntl(fd_, F_SETFL, 0);
  }
  ~RawArena() {
    if (fd_ >= 0) close(fd_);
  }
  void Close() {
    close(fd_);
    fd_ = -1;
  }

  bool Send(absl::string_view bytes) { return SendWithFd(fd_, bytes, -1).ok(); }
  bool Send(Op op, uint64_t id, absl::string_view body) {
    return Send(wire::local::EncodeFrame(op, id, body));
  }
  // The next reply's body; nullopt when the daemon closed the connection.
  std::optional<std::string> Reply(int* passed = nullptr) {
    wire::local::FrameHeader h;
    int fd = -1;
    if (!ReadAll(&h, sizeof(h), &fd)) return std::nullopt;
    if (passed != nullptr) *passed = fd;
    std::string body(h.body_bytes, '\0');
    if (!ReadAll(body.data(), body.size(), &fd)) return std::nullopt;
    return body;
  }
  // Hello; the arena's descriptor (or -1) and the reply's fields.
  int Hello(const std::string& token, wire::local::HelloReply* fields) {
    if (!Send(Op::kHello, 0, token)) return -1;
    int passed = -1;
    std::optional<std::string> body = Reply(&passed);
    EXPECT_TRUE(body.has_value());
    EXPECT_TRUE(body && wire::local::ParseHelloReply(*body, fields).ok());
    return passed;
  }
  // A Put of `keys` (`size` bytes each, checksum `checksum`); the reply body.
  std::optional<std::string> Put(uint64_t id, const std::string& ns_id,
                                 const std::vector<Key128>& keys, uint64_t size,
                                 uint64_t checksum = 0) {
    wire::local::PutCall call{};
    std::memcpy(call.namespace_id, ns_id.data(), sizeof(call.namespace_id));
    std::vector<wire::local::PutItemRecord> records(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      std::memcpy(records[i].fields.key, keys[i].data(), 16);
      records[i].fields.size_bytes = size;
      records[i].fields.checksum = checksum;
    }
    if (!Send(Op::kPut, id, wire::local::EncodePut(call, records))) return std::nullopt;
    return Reply();
  }
  // A Get of `keys` (capacity each); the reply body.
  std::optional<std::string> Get(uint64_t id, const std::string& ns_id,
                                 const std::vector<Key128>& keys, uint64_t capacity) {
    wire::local::GetFields f{};
    std::memcpy(f.namespace_id, ns_id.data(), sizeof(f.namespace_id));
    std::vector<wire::ucx::GetItemRecord> records(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      std::memcpy(records[i].key, keys[i].data(), 16);
      records[i].capacity = capacity;
    }
    if (!Send(Op::kGet, id, wire::local::EncodeGet(f, records))) return std::nullopt;
    return Reply();
  }

 private:
  bool ReadAll(void* data, size_t n, int* fd) {
    auto* p = static_cast<uint8_t*>(data);
    while (n > 0) {
      int got_fd = -1;
      const long got = RecvWithFd(fd_, p, n, &got_fd);
      if (got_fd >= 0) *fd = got_fd;
      if (got <= 0) return false;
      p += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }
  int fd_ = -1;
};

class LocalArenaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<DaemonProcess>> d = StartDaemon();
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
  }
  std::unique_ptr<Client> Connect(const std::string& uri, ClientOptions options = {}) {
    absl::StatusOr<std::unique_ptr<Client>> c = ConnectClient(uri, options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  // A client of the local socket with the tests' namespace open.
  struct LocalClient {
    std::unique_ptr<Client> client;
    NamespaceHandle ns;
  };
  LocalClient ConnectLocal(ClientOptions options = {}) {
    LocalClient c{Connect(daemon_->local_uri(), options), {}};
    absl::StatusOr<NamespaceHandle> ns = c.client == nullptr
                                             ? absl::UnavailableError("not connected")
                                             : c.client->OpenNamespace(TestNamespace("arena"));
    EXPECT_TRUE(ns.ok()) << ns.status();
    if (ns.ok()) c.ns = *ns;
    return c;
  }
  // Gets `key` through `c`: its bytes, or empty (the test failed) when it did not arrive.
  std::vector<uint8_t> GetBytes(LocalClient& c, const Key128& key, size_t capacity) {
    std::vector<uint8_t> buf;
    GetItem item;
    const absl::Status s = GetOne(*c.client, c.ns, key, capacity, &buf, &item);
    EXPECT_TRUE(s.ok() && item.status.ok()) << s << " " << item.status;
    if (!s.ok() || !item.status.ok()) return {};
    buf.resize(item.size);
    return buf;
  }
  void ExpectPattern(LocalClient& c, const Key128& key, size_t size) {
    const std::vector<uint8_t> bytes = GetBytes(c, key, size);
    ASSERT_EQ(bytes.size(), size);
    EXPECT_EQ(FirstPatternMismatch(key, bytes.data(), size), -1);
  }

  // Puts pattern chunks of `sizes` through TCP; their keys.
  std::vector<Key128> PutPatterns(const std::vector<size_t>& sizes) {
    std::unique_ptr<Client> c = Connect(daemon_->uri());
    const std::vector<Payload> payloads = Patterns(sizes);
    absl::StatusOr<NamespaceHandle> ns = c->OpenNamespace(TestNamespace("arena"));
    EXPECT_TRUE(ns.ok() && PutAll(*c, *ns, payloads).ok());
    std::vector<Key128> keys;
    for (const Payload& p : payloads) keys.push_back(p.key);
    return keys;
  }

  // Pattern chunks of `sizes` with fresh keys.
  std::vector<Payload> Patterns(const std::vector<size_t>& sizes) {
    std::vector<Payload> payloads;
    for (size_t size : sizes) {
      Payload p;
      p.key = RandomKey(rng_);
      p.bytes = PatternBytes(p.key, size);
      p.tokens = 16;
      payloads.push_back(std::move(p));
    }
    return payloads;
  }
  // Reads `payloads` back through TCP: every one stored with its bytes.
  void ExpectStored(const std::vector<Payload>& payloads) {
    std::unique_ptr<Client> tcp = Connect(daemon_->uri());
    absl::StatusOr<NamespaceHandle> ns = tcp->OpenNamespace(TestNamespace("arena"));
    ASSERT_TRUE(ns.ok()) << ns.status();
    for (const Payload& p : payloads) {
      std::vector<uint8_t> buf;
      GetItem item;
      ASSERT_TRUE(GetOne(*tcp, *ns, p.key, p.bytes.size(), &buf, &item).ok());
      ASSERT_TRUE(item.status.ok()) << item.status;
      EXPECT_EQ(item.tokens, p.tokens);
      EXPECT_TRUE(buf == p.bytes) << "other bytes stored";
    }
  }

  std::unique_ptr<DaemonProcess> daemon_;
  std::mt19937_64 rng_{std::random_device{}()};
};

TEST_F(LocalArenaTest, ReadsHitsStraightFromTheArena) {
  const std::vector<size_t> sizes = {kMiB, 4096, 3 * kMiB};
  std::vector<Key128> keys = PutPatterns(sizes);
  keys.push_back(RandomKey(rng_));  // never stored
  LocalClient c = ConnectLocal();
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  ASSERT_TRUE(GetMany(*c.client, c.ns, keys, 3 * kMiB, &bufs, &items).ok());
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(items[i].status.ok()) << i << ": " << items[i].status;
    EXPECT_EQ(items[i].size, sizes[i]);
    EXPECT_EQ(items[i].tokens, 16u);
    EXPECT_EQ(FirstPatternMismatch(keys[i], bufs[i].data(), sizes[i]), -1) << i;
  }
  EXPECT_TRUE(absl::IsNotFound(items[3].status)) << items[3].status;
  EXPECT_EQ(Metric(*daemon_, kDirectOut), 4 * kMiB + 4096) << "not read through the arena";
  EXPECT_TRUE(MetricReaches(*daemon_, kHeld, 0)) << "the Get was not released";
  // A buffer too small: the size needed, the buffer untouched, as over gRPC.
  std::vector<uint8_t> small;
  GetItem item;
  ASSERT_TRUE(GetOne(*c.client, c.ns, keys[0], 1000, &small, &item).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(item.status)) << item.status;
  EXPECT_EQ(item.size, kMiB);
}

// One connection may hold an eighth of the arena (8 of 64 MiB here): a larger batch is read in
// rounds, every chunk still from the arena.
TEST_F(LocalArenaTest, ABatchLargerThanAConnectionMayHoldIsReadInRounds) {
  const std::vector<size_t> sizes(6, 2 * kMiB);
  const std::vector<Key128> keys = PutPatterns(sizes);
  LocalClient c = ConnectLocal();
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<GetItem> items;
  ASSERT_TRUE(GetMany(*c.client, c.ns, keys, 2 * kMiB, &bufs, &items).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(items[i].status.ok()) << i << ": " << items[i].status;
    EXPECT_EQ(FirstPatternMismatch(keys[i], bufs[i].data(), 2 * kMiB), -1) << i;
  }
  EXPECT_EQ(Metric(*daemon_, kDirectOut), 12 * kMiB) << "some chunks went through gRPC";
}

TEST_F(LocalArenaTest, LocalDirectOffReadsThroughGrpc) {
  std::vector<Key128> keys = PutPatterns({kMiB});
  ClientOptions options;
  options.local_direct = false;
  LocalClient c = ConnectLocal(options);
  ExpectPattern(c, keys[0], kMiB);
  EXPECT_EQ(Metric(*daemon_, kDirectOut), 0);
}

// Gets from many threads of one client: each on a connection of its own (up to the
// client's limit), all reading through one mapping, every byte right.
TEST_F(LocalArenaTest, ConcurrentGetsOfOneClient) {
  constexpr int kThreads = 12;  // more than LocalArena::kMaxConnections
  constexpr int kRounds = 10;
  const std::vector<size_t> sizes(kThreads, 512 << 10);
  const std::vector<Key128> keys = PutPatterns(sizes);
  LocalClient c = ConnectLocal();
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const Key128& key = keys[(t + r) % kThreads];
        std::vector<uint8_t> buf;
        GetItem item;
        const absl::Status s = GetOne(*c.client, c.ns, key, 512 << 10, &buf, &item);
        if (!s.ok() || !item.status.ok() ||
            FirstPatternMismatch(key, buf.data(), 512 << 10) != -1) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(Metric(*daemon_, kDirectOut), double{kThreads} * kRounds * (512 << 10));
  EXPECT_TRUE(MetricReaches(*daemon_, kHeld, 0));
}

TEST_F(LocalArenaTest, AVanishedClientsChunksAreReleased) {
  std::vector<Key128> keys = PutPatterns({2 * kMiB});
  std::unique_ptr<v1::KvStash::Stub> stub = RawStub(daemon_->address());
  absl::StatusOr<std::string> ns = RawRegister(*stub, TestNamespace("arena"));
  ASSERT_TRUE(ns.ok()) << ns.status();
  RawArena raw(*daemon_);
  wire::local::HelloReply hello{};
  const int arena_fd = raw.Hello("", &hello);
  ASSERT_GE(arena_fd, 0) << "no descriptor with the Hello reply";
  std::optional<std::string> reply = raw.Get(1, *ns, keys, 2 * kMiB);
  ASSERT_TRUE(reply.has_value());
  // The runs name the chunk's bytes in the mapping the descriptor gives.
  void* map = mmap(nullptr, hello.arena_bytes, PROT_READ, MAP_SHARED, arena_fd,
                   static_cast<off_t>(hello.file_offset));
  close(arena_fd);
  ASSERT_NE(map, MAP_FAILED);
  std::vector<uint8_t> copy;
  ASSERT_TRUE(ParseOne(*reply, [&](const wire::local::ItemReply& r, absl::string_view runs) {
                EXPECT_EQ(r.code, 0);
                for (size_t at = 0; at < runs.size(); at += sizeof(wire::ucx::ArenaRun)) {
                  wire::ucx::ArenaRun run;
                  std::memcpy(&run, runs.data() + at, sizeof(run));
                  const auto* p = static_cast<const uint8_t*>(map) + run.offset;
                  copy.insert(copy.end(), p, p + run.length);
                }
              }).ok());
  munmap(map, hello.arena_bytes);
  ASSERT_EQ(copy.size(), 2 * kMiB);
  EXPECT_EQ(FirstPatternMismatch(keys[0], copy.data(), copy.size()), -1);
  EXPECT_EQ(Metric(*daemon_, kHeld), 2 * kMiB);
  raw.Close();  // no Release: the daemon drops what the connection held
  EXPECT_TRUE(MetricReaches(*daemon_, kHeld, 0));
}

TEST_F(LocalArenaTest, MalformedMessagesEndOnlyTheirConnection) {
  std::vector<Key128> keys = PutPatterns({kMiB});
  std::unique_ptr<v1::KvStash::Stub> stub = RawStub(daemon_->address());
  absl::StatusOr<std::string> ns = RawRegister(*stub, TestNamespace("arena"));
  ASSERT_TRUE(ns.ok()) << ns.status();
  {  // A gRPC client at the wrong socket: its preface is not a frame.
    RawArena raw(*daemon_);
    ASSERT_TRUE(raw.Send(std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")));
    EXPECT_FALSE(raw.Reply().has_value()) << "the connection stayed open";
  }
  {  // A Get before Hello is answered, then the connection ends.
    RawArena raw(*daemon_);
    std::optional<std::string> reply = raw.Get(1, *ns, keys, kMiB);
    ASSERT_TRUE(reply.has_value());
    EXPECT_TRUE(absl::IsFailedPrecondition(ParseOne(*reply)));
    EXPECT_FALSE(raw.Reply().has_value());
  }
  {  // A frame longer than any the protocol allows.
    RawArena raw(*daemon_);
    std::string frame = wire::local::EncodeFrame(Op::kHello, 0, "");
    const uint32_t huge = wire::local::kMaxBodyBytes + 1;
    std::memcpy(frame.data() + offsetof(wire::local::FrameHeader, body_bytes), &huge, 4);
    ASSERT_TRUE(raw.Send(frame));
    EXPECT_FALSE(raw.Reply().has_value());
  }
  {  // Nothing but Hello comes first.
    RawArena raw(*daemon_);
    ASSERT_TRUE(raw.Send(Op::kRelease, 1, ""));
    EXPECT_FALSE(raw.Reply().has_value());
  }
  {  // Before Hello, no message larger than a token is read.
    RawArena raw(*daemon_);
    ASSERT_TRUE(raw.Send(Op::kHello, 0, std::string(8192, 't')));
    EXPECT_FALSE(raw.Reply().has_value());
  }
  {  // After Hello: a ragged Get and an unknown namespace are answered; the connection
     // goes on serving.
    RawArena raw(*daemon_);
    wire::local::HelloReply hello{};
    const int fd = raw.Hello("", &hello);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_TRUE(raw.Send(Op::kGet, 2, "ragged"));
    std::optional<std::string> reply = raw.Reply();
    ASSERT_TRUE(reply.has_value());
    EXPECT_TRUE(absl::IsInvalidArgument(ParseOne(*reply)));
    reply = raw.Get(3, std::string(16, 'x'), keys, kMiB);
    ASSERT_TRUE(reply.has_value());
    EXPECT_FALSE(ParseOne(*reply).ok());
    reply = raw.Get(4, *ns, keys, kMiB);
    ASSERT_TRUE(reply.has_value());
    int code = -99;
    EXPECT_TRUE(ParseOne(*reply, [&](const wire::local::ItemReply& r, absl::string_view) {
                  code = r.code;
                }).ok());
    EXPECT_EQ(code, 0);
  }
  LocalClient c = ConnectLocal();
  ExpectPattern(c, keys[0], kMiB);
}

TEST_F(LocalArenaTest, PutsWriteStraightIntoTheArena) {
  const std::vector<Payload> payloads = Patterns({kMiB, 4096, 3 * kMiB});
  LocalClient c = ConnectLocal();
  ASSERT_TRUE(PutAll(*c.client, c.ns, payloads).ok());
  EXPECT_EQ(Metric(*daemon_, kDirectIn), 4 * kMiB + 4096) << "not written through the arena";
  EXPECT_EQ(Metric(*daemon_, kHeld), 0) << "reservations left after the Commit";
  ExpectStored(payloads);
  // A repeat is answered as over gRPC: already present, nothing written.
  std::vector<PutItem> items = {payloads[0].AsPutItem()};
  ASSERT_TRUE(c.client->Put(c.ns, absl::MakeSpan(items)).ok());
  EXPECT_TRUE(items[0].status.ok()) << items[0].status;
  EXPECT_TRUE(items[0].already_present);
  EXPECT_EQ(Metric(*daemon_, kDirectIn), 4 * kMiB + 4096);
}

// One connection may reserve an eighth of the arena (8 of 64 MiB): a larger batch is
// written in rounds, every chunk still into the arena.
TEST_F(LocalArenaTest, APutLargerThanAConnectionMayReserveIsWrittenInRounds) {
  const std::vector<Payload> payloads = Patterns(std::vector<size_t>(6, 2 * kMiB));
  LocalClient c = ConnectLocal();
  ASSERT_TRUE(PutAll(*c.client, c.ns, payloads).ok());
  EXPECT_EQ(Metric(*daemon_, kDirectIn), 12 * kMiB) << "some chunks went through gRPC";
  ExpectStored(payloads);
}

TEST_F(LocalArenaTest, LocalDirectOffWritesThroughGrpc) {
  ClientOptions options;
  options.local_direct = false;
  LocalClient c = ConnectLocal(options);
  const std::vector<Payload> payloads = Patterns({kMiB});
  ASSERT_TRUE(PutAll(*c.client, c.ns, payloads).ok());
  EXPECT_EQ(Metric(*daemon_, kDirectIn), 0);
  ExpectStored(payloads);
}

// A reservation never committed (the client vanished) leaves no trace; a Commit naming no
// Put is refused without ending the connection; bytes that are not the chunk announced
// are refused at the Commit.
TEST_F(LocalArenaTest, UncommittedOrWrongPutsStoreNothing) {
  std::unique_ptr<v1::KvStash::Stub> stub = RawStub(daemon_->address());
  absl::StatusOr<std::string> ns = RawRegister(*stub, TestNamespace("arena"));
  ASSERT_TRUE(ns.ok()) << ns.status();
  const std::vector<Payload> payloads = Patterns({2 * kMiB, kMiB});
  {
    RawArena raw(*daemon_);
    wire::local::HelloReply hello{};
    const int fd = raw.Hello("", &hello);
    ASSERT_GE(fd, 0);
    close(fd);
    std::optional<std::string> reply = raw.Put(1, *ns, {payloads[0].key}, 2 * kMiB);
    ASSERT_TRUE(reply.has_value());
    int code = -99;
    ASSERT_TRUE(ParseOnePut(*reply, [&](const wire::local::PutItemReply& r, absl::string_view) {
                  code = r.code;
                }).ok());
    EXPECT_EQ(code, 0);
    EXPECT_EQ(Metric(*daemon_, kHeld), 2 * kMiB);
    ASSERT_TRUE(raw.Send(Op::kCommit, 7, ""));
    reply = raw.Reply();
    ASSERT_TRUE(reply.has_value());
    EXPECT_TRUE(absl::IsInvalidArgument(ParseOnePut(*reply)));
  }  // closed without the Commit
  EXPECT_TRUE(MetricReaches(*daemon_, kHeld, 0));
  {
    RawArena raw(*daemon_);
    wire::local::HelloReply hello{};
    const int fd = raw.Hello("", &hello);
    ASSERT_GE(fd, 0);
    void* map = mmap(nullptr, hello.arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                     static_cast<off_t>(hello.file_offset));
    close(fd);
    ASSERT_NE(map, MAP_FAILED) << "the descriptor does not map for writing";
    const Payload& p = payloads[1];
    std::optional<std::string> reply =
        raw.Put(2, *ns, {p.key}, kMiB, XXH3_64bits(p.bytes.data(), p.bytes.size()));
    ASSERT_TRUE(reply.has_value());
    ASSERT_TRUE(
        ParseOnePut(*reply, [&](const wire::local::PutItemReply& r, absl::string_view runs) {
          ASSERT_EQ(r.code, 0);
          for (size_t at = 0; at < runs.size(); at += sizeof(wire::ucx::ArenaRun)) {
            wire::ucx::ArenaRun run;
            std::memcpy(&run, runs.data() + at, sizeof(run));
            std::memset(static_cast<uint8_t*>(map) + run.offset, 0x5a, run.length);
          }
        }).ok());
    munmap(map, hello.arena_bytes);
    ASSERT_TRUE(raw.Send(Op::kCommit, 2, ""));
    reply = raw.Reply();
    ASSERT_TRUE(reply.has_value());
    int code = -99;
    ASSERT_TRUE(ParseOnePut(*reply, [&](const wire::local::PutItemReply& r, absl::string_view) {
                  code = r.code;
                }).ok());
    EXPECT_EQ(code, static_cast<int>(absl::StatusCode::kDataLoss));
  }
  EXPECT_TRUE(MetricReaches(*daemon_, kHeld, 0));
  std::unique_ptr<Client> tcp = Connect(daemon_->uri());
  absl::StatusOr<NamespaceHandle> tns = tcp->OpenNamespace(TestNamespace("arena"));
  ASSERT_TRUE(tns.ok()) << tns.status();
  for (const Payload& p : payloads) {
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(*tcp, *tns, p.key, 2 * kMiB, &buf, &item).ok());
    EXPECT_TRUE(absl::IsNotFound(item.status)) << item.status;
  }
}

TEST_F(LocalArenaTest, AClientMapsTheNextDaemonsArena) {
  std::vector<Key128> keys = PutPatterns({kMiB});
  LocalClient c = ConnectLocal();
  ExpectPattern(c, keys[0], kMiB);
  ASSERT_EQ(Metric(*daemon_, kDirectOut), kMiB);
  const std::string socket = daemon_->ready().local;
  ASSERT_GT(ArenaMappings(), 0) << "the arena is not mapped here";
  daemon_->Kill();
  // An idle client lets the dead daemon's arena go (its memory with it) within seconds.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (ArenaMappings() > 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(ArenaMappings(), 0) << "the killed daemon's arena is still mapped";
  absl::StatusOr<std::unique_ptr<DaemonProcess>> next = StartDaemon(socket);
  ASSERT_TRUE(next.ok()) << next.status();
  // The killed daemon's object keeps its directory, where the socket lies.
  const std::unique_ptr<DaemonProcess> killed = std::exchange(daemon_, *std::move(next));
  // The same key, other bytes: the old arena's copy must never come back.
  std::unique_ptr<Client> tcp = Connect(daemon_->uri());
  absl::StatusOr<NamespaceHandle> tns = tcp->OpenNamespace(TestNamespace("arena"));
  ASSERT_TRUE(tns.ok()) << tns.status();
  Payload p;
  p.key = keys[0];
  p.bytes = RandomBytes(rng_, kMiB);
  ASSERT_TRUE(PutAll(*tcp, *tns, {p}).ok());
  // The client dropped the dead connections while idle: its next gets map the new arena.
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(GetBytes(c, keys[0], kMiB), p.bytes) << "round " << round << " read other bytes";
  }
  EXPECT_EQ(Metric(*daemon_, kDirectOut), 2 * kMiB) << "the new arena was not read";
}

// A client busy when its daemon dies finds out on its next get: that one reads through
// gRPC (from the next daemon), and a second later the next daemon's arena is mapped.
TEST_F(LocalArenaTest, AClientBusyAcrossARestartFallsBackThenMapsAgain) {
  std::vector<Key128> keys = PutPatterns({kMiB});
  LocalClient c = ConnectLocal();
  ExpectPattern(c, keys[0], kMiB);
  const std::string socket = daemon_->ready().local;
  daemon_->Kill();
  absl::StatusOr<std::unique_ptr<DaemonProcess>> next = StartDaemon(socket);
  ASSERT_TRUE(next.ok()) << next.status();
  const std::unique_ptr<DaemonProcess> killed = std::exchange(daemon_, *std::move(next));
  keys = PutPatterns({kMiB});
  // Within the watcher's second the idle connection may still be there: the get fails on
  // it, and gRPC answers.
  ExpectPattern(c, keys[0], kMiB);
  absl::SleepFor(absl::Milliseconds(1100));
  ExpectPattern(c, keys[0], kMiB);
  EXPECT_GE(Metric(*daemon_, kDirectOut), kMiB) << "the new arena was not read";
}

}  // namespace
}  // namespace kvstash::testing
