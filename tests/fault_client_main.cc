// kvstash_fault_client: a client that stops in the middle of a call and waits to be
// killed, so tests can check what the daemon does when a peer vanishes mid-transfer.
//
//   kvstash_fault_client put TRANSPORT ADDRESS MODEL_ID KEY_HEX SIZE
//     Starts a Put of one SIZE-byte chunk and stalls it: over gRPC after sending an eighth
//     of the payload in 1 MiB frames; over UCX by no longer progressing its worker once
//     the request is out, so the rendezvous transfer stalls with the daemon's reservation
//     in place (over shared memory the daemon may still pull the whole payload).
//   kvstash_fault_client get TRANSPORT ADDRESS MODEL_ID KEY_HEX SIZE
//     Starts a Get of one chunk (capacity SIZE) and stalls it: over gRPC after reading 3
//     frames; over UCX before receiving the reply, so the daemon's sends (and the chunk
//     references they hold) stay in flight.
//
// TRANSPORT is a TransportName (Grpc, UcxTcp, UcxShm); ADDRESS is that listener's
// HOST:PORT. Once stalled it prints "ready" and sleeps until killed. Errors go to stderr
// with exit code 1; bad usage exits 2.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "proto/ucx_wire.h"
#include "tests/daemon_fixture.h"
#include "tests/test_util.h"
#include "tests/ucx_raw_client.h"

namespace kvstash::testing {
namespace {

namespace ucx = wire::ucx;

// What a stalled call works on.
struct Call {
  std::string mode;  // "put" or "get"
  Transport transport = Transport::kGrpc;
  std::string address;
  std::string model;
  Key128 key{};
  uint64_t size = 0;
};

[[noreturn]] void ReadyThenSleep() {
  printf("ready\n");
  fflush(stdout);
  while (true) pause();
}

int Fail(const std::string& what) {
  fprintf(stderr, "kvstash_fault_client: %s\n", what.c_str());
  return 1;
}

int GrpcStalledPut(v1::KvStash::Stub& stub, const std::string& ns, const Call& call) {
  grpc::ClientContext ctx;
  v1::PutResponse response;
  auto writer = stub.Put(&ctx, &response);
  v1::PutFrame frame;
  frame.set_namespace_id(ns);
  frame.mutable_header()->set_key(KeyToBytes(call.key));
  frame.mutable_header()->set_size_bytes(call.size);
  if (!writer->Write(frame)) return Fail("header write failed");
  const std::string data(kMiB, 'z');
  const uint64_t send = call.size / 8;
  for (uint64_t sent = 0; sent < send; sent += data.size()) {
    v1::PutFrame more;
    more.set_data(data.substr(0, std::min<uint64_t>(data.size(), send - sent)));
    if (!writer->Write(more)) return Fail("data write failed");
  }
  ReadyThenSleep();
}

int GrpcStalledGet(v1::KvStash::Stub& stub, const std::string& ns, const Call& call) {
  grpc::ClientContext ctx;
  v1::GetRequest request;
  request.set_namespace_id(ns);
  request.set_keys(KeyToBytes(call.key));
  auto reader = stub.Get(&ctx, request);
  v1::GetFrame frame;
  for (int i = 0; i < 3; ++i) {
    if (!reader->Read(&frame)) return Fail("stream ended early");
  }
  ReadyThenSleep();
}

int Grpc(const Call& call) {
  auto stub = RawStub(call.address);
  auto ns = RawRegister(*stub, TestNamespace(call.model));
  if (!ns.ok()) return Fail(ns.status().ToString());
  return call.mode == "put" ? GrpcStalledPut(*stub, *ns, call) : GrpcStalledGet(*stub, *ns, call);
}

int UcxStalledPut(RawUcxClient& c, const std::string& ns, const Call& call) {
  static std::vector<uint8_t> payload;  // must outlive the (never finished) send
  payload = PatternBytes(call.key, call.size);
  static uint8_t header[sizeof(ucx::RequestHeader) + sizeof(ucx::PutFields)];
  const ucx::RequestHeader h =
      ucx::MakeRequestHeader(ucx::Op::kPut, 1, reinterpret_cast<const uint8_t*>(ns.data()));
  ucx::PutFields f{};
  std::memcpy(f.key, call.key.data(), 16);
  f.size_bytes = call.size;
  f.count = 1;
  std::memcpy(header, &h, sizeof(h));
  std::memcpy(header + sizeof(h), &f, sizeof(f));
  if (absl::Status s = c.Send(header, sizeof(header), payload.data(), call.size); !s.ok()) {
    return Fail(s.ToString());
  }
  ReadyThenSleep();
}

int UcxStalledGet(RawUcxClient& c, const std::string& ns, const Call& call) {
  static uint8_t header[sizeof(ucx::RequestHeader) + sizeof(ucx::GetFields)];
  static ucx::GetItemRecord record;
  const ucx::RequestHeader h =
      ucx::MakeRequestHeader(ucx::Op::kGet, 1, reinterpret_cast<const uint8_t*>(ns.data()));
  ucx::GetFields g{};
  g.count = 1;
  std::memcpy(header, &h, sizeof(h));
  std::memcpy(header + sizeof(h), &g, sizeof(g));
  std::memcpy(record.key, call.key.data(), 16);
  record.capacity = call.size;
  if (absl::Status s = c.Send(header, sizeof(header), &record, sizeof(record)); !s.ok()) {
    return Fail(s.ToString());
  }
  // Only until the request is out: the reply's payload must stay undelivered.
  while (c.sends_in_flight() > 0) c.Progress(absl::Microseconds(10));
  ReadyThenSleep();
}

int Ucx(const Call& call) {
  auto client = RawUcxClient::Connect(call.address, UcxTls(call.transport));
  if (!client.ok()) return Fail(client.status().ToString());
  auto ns = (*client)->RegisterNamespace(call.model);
  if (!ns.ok()) return Fail(ns.status().ToString());
  return call.mode == "put" ? UcxStalledPut(**client, *ns, call)
                            : UcxStalledGet(**client, *ns, call);
}

int Main(int argc, char** argv) {
  if (argc != 7) return 2;
  Call call;
  call.mode = argv[1];
  if (call.mode != "put" && call.mode != "get") return 2;
  const std::optional<Transport> transport = TransportNamed(argv[2]);
  call.address = argv[3];
  call.model = argv[4];
  auto key = KeyFromHex(argv[5]);
  if (!transport || !key.ok() || !absl::SimpleAtoi(argv[6], &call.size)) return 2;
  call.transport = *transport;
  call.key = *key;
  return call.transport == Transport::kGrpc ? Grpc(call) : Ucx(call);
}

}  // namespace
}  // namespace kvstash::testing

int main(int argc, char** argv) { return kvstash::testing::Main(argc, argv); }
