// Fuzzes the UCX data plane's request decoding (proto/ucx_wire.h) as the daemon's request
// handler applies it (server/ucx/): the AM header of every op (Hello, Attach, the unary
// ops, Put with and without its hints block, Get, Commit, Release) and the body each op
// reads, plus the reply headers a client decodes. Input: one byte giving the AM header's
// length, that many header bytes, and the body. Checks: an accepted header re-encodes to
// the same bytes and has its op's exact length, an accepted Put or Get body is what its
// header announced, an Attach body splits into token and address.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/ucx_wire.h"
#include "server/request_rules.h"

namespace kvstash::fuzz {
namespace {

namespace ucx = wire::ucx;

const server::ServiceLimits& Limits() {
  static const server::ServiceLimits limits = [] {
    server::ServiceLimits l;
    l.max_keys_per_request = 16;
    l.max_ttl_ms = 60000;
    return l;
  }();
  return limits;
}

// As server/ucx/ucx_put.cc reads a Put: its fields, its hints, the chunk rules, and the
// payload the message must carry.
void CheckPut(const ucx::RequestHeader& rh, const void* header, absl::string_view body) {
  const auto f = ucx::ReadFields<ucx::PutFields>(header);
  ucx::PutHintsFields hints;
  const absl::Status read = ucx::ReadPutHints(header, rh.flags, &hints);
  if ((rh.flags & ucx::kFlagPutHints) == 0) FUZZ_CHECK(read.ok() && hints.hint_flags == 0);
  if (!read.ok()) return;
  FUZZ_CHECK((hints.hint_flags & ~(ucx::kHintHasParent | ucx::kHintPin)) == 0);
  FUZZ_CHECK(hints.reserved == 0);
  server::PutChunkHeader h;
  h.index = f.index;
  h.count = f.count;
  h.key = absl::string_view(reinterpret_cast<const char*>(f.key), sizeof(f.key));
  h.meta = storage::ChunkMeta{f.size_bytes, f.tokens, f.format, f.checksum};
  if ((hints.hint_flags & ucx::kHintHasParent) != 0) {
    h.hints.parent_key = absl::string_view(reinterpret_cast<const char*>(hints.parent_key),
                                           sizeof(hints.parent_key));
  }
  h.hints.session_id = hints.session_id;
  h.hints.ttl_ms = hints.ttl_ms;
  h.hints.priority = hints.priority;
  h.hints.pin = (hints.hint_flags & ucx::kHintPin) != 0;
  if (!server::CheckPutChunk(h, Limits()).ok()) return;
  FUZZ_CHECK(h.meta.size_bytes > 0 && h.index < Limits().max_keys_per_request);
  FUZZ_CHECK(h.hints.ttl_ms <= Limits().max_ttl_ms && h.hints.priority <= 2);
}

// As server/ucx/ucx_get.cc reads a Get: the key count, then one record per key.
void CheckGet(const void* header, absl::string_view body) {
  const auto g = ucx::ReadFields<ucx::GetFields>(header);
  if (g.count != 0 && !server::CheckKeyCount(g.count, Limits()).ok()) return;
  if (!ucx::CheckGetBody(g, body.size()).ok()) return;
  FUZZ_CHECK(g.count > 0 && g.count <= Limits().max_keys_per_request);
  FUZZ_CHECK(body.size() == g.count * sizeof(ucx::GetItemRecord));
  for (uint32_t i = 0; i < g.count; ++i) {
    ucx::GetItemRecord rec;
    std::memcpy(&rec, body.data() + i * sizeof(rec), sizeof(rec));
  }
}

void CheckAttach(absl::string_view body) {
  uint64_t token = 0;
  absl::string_view address;
  if (!ucx::ParseAttachBody(body, &token, &address).ok()) return;
  FUZZ_CHECK(!address.empty() && address.size() + sizeof(token) == body.size());
  FUZZ_CHECK(std::memcmp(&token, body.data(), sizeof(token)) == 0);
}

// The unary ops' bodies are serialized kvstash.v1 requests (server/requests.cc Unary).
std::unique_ptr<google::protobuf::MessageLite> UnaryRequest(ucx::Op op) {
  switch (op) {
    case ucx::Op::kHealth:
      return std::make_unique<v1::HealthRequest>();
    case ucx::Op::kRegisterNamespace:
      return std::make_unique<v1::RegisterNamespaceRequest>();
    case ucx::Op::kLookup:
      return std::make_unique<v1::LookupRequest>();
    case ucx::Op::kExists:
    case ucx::Op::kDelete:
      return std::make_unique<v1::KeysRequest>();
    case ucx::Op::kStats:
      return std::make_unique<v1::StatsRequest>();
    case ucx::Op::kListNamespaces:
      return std::make_unique<v1::ListNamespacesRequest>();
    case ucx::Op::kClearNamespace:
      return std::make_unique<v1::ClearNamespaceRequest>();
    case ucx::Op::kPin:
      return std::make_unique<v1::PinRequest>();
    case ucx::Op::kEndSession:
      return std::make_unique<v1::EndSessionRequest>();
    default:
      return nullptr;
  }
}

// An accepted Hello body with a token re-encodes to itself; one without is empty or a
// bare length field of 0.
void CheckHello(absl::string_view body) {
  absl::string_view token;
  if (!ucx::ParseHello(body, &token).ok()) return;
  if (token.empty()) {
    FUZZ_CHECK(body.empty() || body.size() == sizeof(ucx::HelloBody));
  } else {
    FUZZ_CHECK(ucx::EncodeHello(token) == body);
  }
}

void CheckRequest(absl::string_view header, absl::string_view body) {
  ucx::RequestHeader rh;
  if (!ucx::ParseRequestHeader(header.data(), header.size(), &rh).ok()) return;
  const auto op = static_cast<ucx::Op>(rh.op);
  FUZZ_CHECK(header.size() == ucx::RequestHeaderLength(op, rh.flags));
  ucx::RequestHeader again = ucx::MakeRequestHeader(op, rh.request_id, rh.namespace_id);
  again.flags = rh.flags;
  FUZZ_CHECK(std::memcmp(&again, header.data(), sizeof(again)) == 0);
  switch (op) {
    case ucx::Op::kPut:
      CheckPut(rh, header.data(), body);
      return;
    case ucx::Op::kGet:
      CheckGet(header.data(), body);
      return;
    case ucx::Op::kCommit:
      (void)ucx::ReadFields<ucx::CommitFields>(header.data());
      return;
    case ucx::Op::kAttach:
      CheckAttach(body);
      return;
    case ucx::Op::kHello:
      CheckHello(body);
      return;
    case ucx::Op::kRelease:
      return;
    default:
      break;
  }
  std::unique_ptr<google::protobuf::MessageLite> req = UnaryRequest(op);
  FUZZ_CHECK(req != nullptr);
  if (!req->ParseFromArray(body.data(), static_cast<int>(body.size()))) return;
  std::unique_ptr<google::protobuf::MessageLite> again_req(req->New());
  FUZZ_CHECK(again_req->ParseFromString(req->SerializeAsString()));
  FUZZ_CHECK(again_req->SerializeAsString() == req->SerializeAsString());
}

// What a client decodes from the daemon: reply headers and the Hello reply body.
void CheckReply(absl::string_view header, absl::string_view body) {
  ucx::ReplyHeader reply;
  if (ucx::ParseReplyHeader(header.data(), header.size(), &reply).ok()) {
    FUZZ_CHECK(reply.magic == ucx::kMagic && reply.version == ucx::kVersion);
  }
  ucx::HelloReply hello;
  absl::string_view address;
  if (ucx::ParseHelloReply(body, &hello, &address).ok()) {
    FUZZ_CHECK(ucx::EncodeHelloReply(hello, address) == body);
  }
}

}  // namespace
}  // namespace kvstash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvstash::fuzz::QuietProtobuf();
  if (size == 0) return 0;
  const absl::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t header_length = std::min<size_t>(data[0], in.size());
  // The header in a block of its own size, so that ASan sees a read past it; the body
  // ends where the fuzzer's buffer does.
  std::unique_ptr<char[]> header(new char[header_length]);
  if (header_length > 0) std::memcpy(header.get(), in.data(), header_length);
  const absl::string_view header_view(header.get(), header_length);
  const absl::string_view body = in.substr(header_length);
  kvstash::fuzz::CheckRequest(header_view, body);
  kvstash::fuzz::CheckReply(header_view, body);
  return 0;
}
