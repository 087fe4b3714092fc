// kvstash_ucx_fault_client: a UCX client that stops in the middle of a call and waits to be
// killed, so tests can check what the daemon does when a UCX peer vanishes mid-transfer.
//
//   kvstash_ucx_fault_client put ADDRESS TLS MODEL_ID KEY_HEX SIZE
//     Sends a Put of one SIZE-byte chunk and stops progressing its worker, so the
//     rendezvous transfer stalls (over TCP) with the daemon's reservation in place.
//   kvstash_ucx_fault_client get ADDRESS TLS MODEL_ID KEY_HEX SIZE
//     Sends a Get of one chunk (capacity SIZE) and stops progressing before receiving it,
//     so the daemon's sends (and the chunk references they hold) stay in flight.
//
// TLS is the UCX transport list ("tcp", "sm,self"); "-" means UCX_TLS. Once stopped it
// prints "ready" and sleeps until killed. Errors go to stderr with exit code 1; bad usage
// exits 2.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "kvstash/keys.h"
#include "proto/ucx_wire.h"
#include "tests/test_util.h"
#include "tests/ucx_raw_client.h"

namespace kvstash::testing {
namespace {

namespace ucx = wire::ucx;

[[noreturn]] void ReadyThenSleep() {
  printf("ready\n");
  fflush(stdout);
  while (true) pause();
}

int Fail(const std::string& what) {
  fprintf(stderr, "kvstash_ucx_fault_client: %s\n", what.c_str());
  return 1;
}

int StalledPut(RawUcxClient& c, const std::string& ns, const Key128& key, uint64_t size) {
  static std::vector<uint8_t> payload;  // must outlive the (never finished) send
  payload = PatternBytes(key, size);
  static uint8_t header[sizeof(ucx::RequestHeader) + sizeof(ucx::PutFields)];
  const ucx::RequestHeader h = ucx::MakeRequestHeader(
      ucx::Op::kPut, 1, reinterpret_cast<const uint8_t*>(ns.data()));
  ucx::PutFields f{};
  std::memcpy(f.key, key.data(), 16);
  f.size_bytes = size;
  f.count = 1;
  std::memcpy(header, &h, sizeof(h));
  std::memcpy(header + sizeof(h), &f, sizeof(f));
  if (absl::Status s = c.Send(header, sizeof(header), payload.data(), size); !s.ok()) {
    return Fail(s.ToString());
  }
  ReadyThenSleep();
}

int StalledGet(RawUcxClient& c, const std::string& ns, const Key128& key, uint64_t size) {
  static uint8_t header[sizeof(ucx::RequestHeader) + sizeof(ucx::GetFields)];
  static ucx::GetItemRecord record;
  const ucx::RequestHeader h = ucx::MakeRequestHeader(
      ucx::Op::kGet, 1, reinterpret_cast<const uint8_t*>(ns.data()));
  ucx::GetFields g{};
  g.count = 1;
  std::memcpy(header, &h, sizeof(h));
  std::memcpy(header + sizeof(h), &g, sizeof(g));
  std::memcpy(record.key, key.data(), 16);
  record.capacity = size;
  if (absl::Status s = c.Send(header, sizeof(header), &record, sizeof(record)); !s.ok()) {
    return Fail(s.ToString());
  }
  // Only until the request is out: the reply's payload must stay undelivered.
  while (c.sends_in_flight() > 0) c.Progress(absl::Microseconds(10));
  ReadyThenSleep();
}

int Main(int argc, char** argv) {
  if (argc != 7) return 2;
  const std::string mode = argv[1];
  const std::string tls = std::string(argv[3]) == "-" ? "" : argv[3];
  auto client = RawUcxClient::Connect(argv[2], tls);
  if (!client.ok()) return Fail(client.status().ToString());
  auto ns = (*client)->RegisterNamespace(argv[4]);
  if (!ns.ok()) return Fail(ns.status().ToString());
  auto key = KeyFromHex(argv[5]);
  uint64_t size = 0;
  if (!key.ok() || !absl::SimpleAtoi(argv[6], &size)) return 2;
  if (mode == "put") return StalledPut(**client, *ns, *key, size);
  if (mode == "get") return StalledGet(**client, *ns, *key, size);
  return 2;
}

}  // namespace
}  // namespace kvstash::testing

int main(int argc, char** argv) { return kvstash::testing::Main(argc, argv); }
