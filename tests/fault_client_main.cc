// kvstash_fault_client: a client that stops in the middle of a call and waits to be
// killed, so tests can check what the daemon does when a peer vanishes mid-stream.
//
//   kvstash_fault_client put ADDRESS MODEL_ID KEY_HEX TOTAL_BYTES SEND_BYTES
//     Starts a Put of one TOTAL_BYTES chunk, sends SEND_BYTES of it in 1 MiB frames.
//   kvstash_fault_client get ADDRESS MODEL_ID KEY_HEX FRAMES
//     Starts a Get of one chunk and reads FRAMES frames of it.
//
// Once there it prints "ready" on stdout and sleeps until killed. Errors go to stderr
// with exit code 1; bad usage exits 2.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

[[noreturn]] void ReadyThenSleep() {
  printf("ready\n");
  fflush(stdout);
  while (true) pause();
}

int Fail(const std::string& what) {
  fprintf(stderr, "kvstash_fault_client: %s\n", what.c_str());
  return 1;
}

int StalledPut(v1::KvStash::Stub& stub, const std::string& ns, const Key128& key, uint64_t total,
               uint64_t send) {
  grpc::ClientContext ctx;
  v1::PutResponse response;
  auto writer = stub.Put(&ctx, &response);
  v1::PutFrame frame;
  frame.set_namespace_id(ns);
  frame.mutable_header()->set_key(KeyBytes(key));
  frame.mutable_header()->set_size_bytes(total);
  if (!writer->Write(frame)) return Fail("header write failed");
  const std::string data(kMiB, 'z');
  for (uint64_t sent = 0; sent < send; sent += data.size()) {
    v1::PutFrame more;
    more.set_data(data.substr(0, std::min<uint64_t>(data.size(), send - sent)));
    if (!writer->Write(more)) return Fail("data write failed");
  }
  ReadyThenSleep();
}

int StalledGet(v1::KvStash::Stub& stub, const std::string& ns, const Key128& key, int frames) {
  grpc::ClientContext ctx;
  v1::GetRequest request;
  request.set_namespace_id(ns);
  request.set_keys(KeyBytes(key));
  auto reader = stub.Get(&ctx, request);
  v1::GetFrame frame;
  for (int i = 0; i < frames; ++i) {
    if (!reader->Read(&frame)) return Fail("stream ended early");
  }
  ReadyThenSleep();
}

int Main(int argc, char** argv) {
  if (argc < 5) return 2;
  const std::string mode = argv[1];
  auto stub = RawStub(argv[2]);
  auto ns = RawRegister(*stub, TestNamespace(argv[3]));
  if (!ns.ok()) return Fail(ns.status().ToString());
  auto key = KeyFromHex(argv[4]);
  if (!key.ok()) return 2;
  if (mode == "put" && argc == 7) {
    uint64_t total = 0, send = 0;
    if (!absl::SimpleAtoi(argv[5], &total) || !absl::SimpleAtoi(argv[6], &send)) return 2;
    return StalledPut(*stub, *ns, *key, total, send);
  }
  if (mode == "get" && argc == 6) {
    int frames = 0;
    if (!absl::SimpleAtoi(argv[5], &frames)) return 2;
    return StalledGet(*stub, *ns, *key, frames);
  }
  return 2;
}

}  // namespace
}  // namespace kvstash::testing

int main(int argc, char** argv) { return kvstash::testing::Main(argc, argv); }
