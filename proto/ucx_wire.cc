#include "proto/ucx_wire.h"

#include <ucp/api/ucp.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kvstash::wire::ucx {

RequestHeader MakeRequestHeader(Op op, uint64_t request_id, const uint8_t* namespace_id) {
  RequestHeader h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.op = static_cast<uint8_t>(op);
  h.request_id = request_id;
  if (namespace_id != nullptr) std::memcpy(h.namespace_id, namespace_id, sizeof(h.namespace_id));
  return h;
}

ReplyHeader MakeReplyHeader(uint8_t op, uint64_t request_id) {
  ReplyHeader h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.op = op;
  h.request_id = request_id;
  return h;
}

std::string EncodeHello(absl::string_view token) {
  if (token.empty()) return {};
  const HelloBody head{static_cast<uint32_t>(token.size())};
  std::string body(reinterpret_cast<const char*>(&head), sizeof(head));
  body.append(token.data(), token.size());
  return body;
}

absl::Status ParseHello(absl::string_view body, absl::string_view* token) {
  *token = {};
  if (body.empty()) return absl::OkStatus();
  HelloBody head;
  if (body.size() < sizeof(head)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Hello body of ", body.size(), " bytes is shorter than its length field"));
  }
  std::memcpy(&head, body.data(), sizeof(head));
  if (head.token_length > kMaxTokenBytes || head.token_length != body.size() - sizeof(head)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Hello token_length ", head.token_length, " does not match the body's ",
                     body.size() - sizeof(head), " bytes (at most ", kMaxTokenBytes, ")"));
  }
  *token = body.substr(sizeof(head));
  return absl::OkStatus();
}

std::string EncodeHelloReply(const HelloReply& reply, absl::string_view worker_address) {
  std::string body(reinterpret_cast<const char*>(&reply), sizeof(reply));
  body.append(worker_address.data(), worker_address.size());
  return body;
}

absl::Status ParseHelloReply(absl::string_view body, HelloReply* reply,
                             absl::string_view* worker_address) {
  if (body.size() <= sizeof(HelloReply)) {
    return absl::InternalError(absl::StrCat("UCX Hello reply of ", body.size(),
                                            " bytes; more than ", sizeof(HelloReply), " expected"));
  }
  std::memcpy(reply, body.data(), sizeof(HelloReply));
  *worker_address = body.substr(sizeof(HelloReply));
  return absl::OkStatus();
}

size_t RequestHeaderLength(Op op, uint16_t flags) {
  switch (op) {
    case Op::kPut:
      return sizeof(RequestHeader) + sizeof(PutFields) +
             ((flags & kFlagPutHints) != 0 ? sizeof(PutHintsFields) : 0);
    case Op::kGet:
      return sizeof(RequestHeader) + sizeof(GetFields);
    case Op::kCommit:
      return sizeof(RequestHeader) + sizeof(CommitFields);
    default:
      return sizeof(RequestHeader);
  }
}

absl::Status ParseRequestHeader(const void* header, size_t length, RequestHeader* out) {
  if (header == nullptr || length < sizeof(RequestHeader)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UCX request header of ", length, " bytes; at least ", sizeof(RequestHeader), " expected"));
  }
  std::memcpy(out, header, sizeof(RequestHeader));
  if (out->magic != kMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat("UCX request header: bad magic 0x", absl::Hex(out->magic)));
  }
  if (out->version != kVersion) {
    return absl::InvalidArgumentError(absl::StrCat("UCX request header: unsupported version ",
                                                   out->version, " (this daemon speaks ", kVersion,
                                                   ")"));
  }
  if (out->op == 0 || out->op > kMaxOp) {
    return absl::InvalidArgumentError(absl::StrCat("UCX request header: unknown op ", out->op));
  }
  const size_t want = RequestHeaderLength(static_cast<Op>(out->op), out->flags);
  if (length != want) {
    return absl::InvalidArgumentError(absl::StrCat("UCX request header for op ", out->op, " is ",
                                                   length, " bytes; expected ", want));
  }
  return absl::OkStatus();
}

absl::Status ParseReplyHeader(const void* header, size_t length, ReplyHeader* out) {
  if (header == nullptr || length != sizeof(ReplyHeader)) {
    return absl::InternalError(
        absl::StrCat("UCX reply header of ", length, " bytes; expected ", sizeof(ReplyHeader)));
  }
  std::memcpy(out, header, sizeof(ReplyHeader));
  if (out->magic != kMagic || out->version != kVersion) {
    return absl::InternalError("UCX reply header: bad magic or version");
  }
  return absl::OkStatus();
}

absl::Status ReadPutHints(const void* header, uint16_t flags, PutHintsFields* out) {
  *out = PutHintsFields{};
  if ((flags & kFlagPutHints) == 0) return absl::OkStatus();
  *out = ReadFields<PutHintsFields>(header, sizeof(PutFields));
  return CheckPutHints(*out);
}

absl::Status CheckPutHints(const PutHintsFields& hints) {
  constexpr uint8_t kKnown = kHintHasParent | kHintPin;
  if ((hints.hint_flags & ~kKnown) != 0 || hints.reserved != 0) {
    return absl::InvalidArgumentError(absl::StrCat("Put hints: unknown hint_flags 0x",
                                                   absl::Hex(hints.hint_flags & ~kKnown),
                                                   " or non-zero reserved bytes"));
  }
  return absl::OkStatus();
}

absl::Status CheckGetBody(const GetFields& fields, size_t length) {
  if (fields.count == 0) return absl::InvalidArgumentError("Get names no keys");
  if (length != uint64_t{fields.count} * sizeof(GetItemRecord)) {
    return absl::InvalidArgumentError(absl::StrCat("Get body of ", length, " bytes for ",
                                                   fields.count, " keys; expected ",
                                                   fields.count * sizeof(GetItemRecord)));
  }
  return absl::OkStatus();
}

absl::Status ParseAttachBody(absl::string_view body, uint64_t* token,
                             absl::string_view* worker_address) {
  if (body.size() <= sizeof(*token)) {
    return absl::InvalidArgumentError(absl::StrCat("UCX Attach body of ", body.size(),
                                                   " bytes; a token and an address expected"));
  }
  std::memcpy(token, body.data(), sizeof(*token));
  *worker_address = body.substr(sizeof(*token));
  return absl::OkStatus();
}

}  // namespace kvstash::wire::ucx
