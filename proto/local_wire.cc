#include "proto/local_wire.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvstash::wire::local {
namespace {

template <typename T>
void Append(const T& value, std::string* out) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

template <typename T>
T Read(absl::string_view body, size_t at) {
  T value;
  std::memcpy(&value, body.data() + at, sizeof(value));
  return value;
}

absl::Status Malformed(absl::string_view what) {
  return absl::InternalError(absl::StrCat("kvstashd sent a malformed ", what, " reply"));
}

// Reads the CallReply heading a reply of `expected` items: sets `*call_status` and leaves
// `*at` 0 for a whole-call error, else sets `*at` past the head.
absl::Status ParseHead(absl::string_view body, uint32_t expected, absl::string_view what,
                       absl::Status* call_status, size_t* at) {
  *call_status = absl::OkStatus();
  *at = 0;
  if (body.size() < sizeof(CallReply)) return Malformed(what);
  const CallReply head = Read<CallReply>(body, 0);
  if (head.code != 0) {
    if (body.size() - sizeof(head) != head.message_bytes || !IsErrorCode(head.code)) {
      return Malformed(what);
    }
    *call_status = absl::Status(static_cast<absl::StatusCode>(head.code),
                                body.substr(sizeof(head), head.message_bytes));
    return absl::OkStatus();
  }
  if (head.items != expected) return Malformed(what);
  *at = sizeof(head);
  return absl::OkStatus();
}

}  // namespace

std::string EncodeFrame(Op op, uint64_t request_id, absl::string_view body) {
  FrameHeader h{kMagic, kVersion,  static_cast<uint8_t>(op), 0, static_cast<uint32_t>(body.size()),
                0,      request_id};
  std::string out;
  out.reserve(sizeof(h) + body.size());
  Append(h, &out);
  out.append(body.data(), body.size());
  return out;
}

absl::Status CheckFrameHeader(const FrameHeader& h) {
  if (h.magic != kMagic) return absl::InvalidArgumentError("not a kvstash local arena message");
  if (h.version != kVersion) {
    return absl::InvalidArgumentError(absl::StrCat("local arena protocol version ", h.version,
                                                   " (this side speaks ", kVersion, ")"));
  }
  if (h.op < static_cast<uint8_t>(Op::kHello) || h.op > static_cast<uint8_t>(Op::kCommit)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown local arena op ", h.op));
  }
  if (h.body_bytes > kMaxBodyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a local arena message of ", h.body_bytes,
                                                   " bytes (at most ", kMaxBodyBytes, ")"));
  }
  return absl::OkStatus();
}

std::string EncodeGet(GetFields fields, absl::Span<const ucx::GetItemRecord> items) {
  fields.count = static_cast<uint32_t>(items.size());
  std::string out;
  out.reserve(sizeof(fields) + items.size() * sizeof(ucx::GetItemRecord));
  Append(fields, &out);
  out.append(reinterpret_cast<const char*>(items.data()),
             items.size() * sizeof(ucx::GetItemRecord));
  return out;
}

absl::Status ParseGet(absl::string_view body, GetFields* fields, absl::string_view* items) {
  if (body.size() < sizeof(GetFields)) {
    return absl::InvalidArgumentError("a local arena Get shorter than its fields");
  }
  *fields = Read<GetFields>(body, 0);
  if (fields->count > kMaxGetItems) {
    return absl::InvalidArgumentError(absl::StrCat("a local arena Get of ", fields->count,
                                                   " items (at most ", kMaxGetItems, ")"));
  }
  const uint64_t record_bytes = uint64_t{fields->count} * sizeof(ucx::GetItemRecord);
  if (body.size() - sizeof(GetFields) != record_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("a local arena Get of ", fields->count,
                                                   " items with ", body.size(), " body bytes"));
  }
  *items = body.substr(sizeof(GetFields));
  return absl::OkStatus();
}

std::string EncodeCallError(const absl::Status& status) {
  std::string out;
  Append(CallReply{static_cast<int32_t>(status.code()), 0,
                   static_cast<uint32_t>(status.message().size()), 0},
         &out);
  out.append(status.message().data(), status.message().size());
  return out;
}

std::string EncodeCallReply(uint32_t items) {
  std::string out;
  Append(CallReply{0, items, 0, 0}, &out);
  return out;
}

void AppendItem(const ItemReply& item, absl::string_view runs, std::string* body) {
  Append(item, body);
  body->append(runs.data(), runs.size());
}

absl::Status ParseGetReply(
    absl::string_view body, uint32_t expected,
    const std::function<void(uint32_t, const ItemReply&, absl::string_view)>& item,
    absl::Status* call_status) {
  size_t at = 0;
  if (absl::Status s = ParseHead(body, expected, "Get", call_status, &at); !s.ok() || at == 0) {
    return s;
  }
  for (uint32_t i = 0; i < expected; ++i) {
    if (body.size() - at < sizeof(ItemReply)) return Malformed("Get");
    const ItemReply r = Read<ItemReply>(body, at);
    at += sizeof(r);
    const uint64_t run_bytes = uint64_t{r.run_count} * sizeof(ucx::ArenaRun);
    if (body.size() - at < run_bytes) return Malformed("Get");
    item(i, r, body.substr(at, run_bytes));
    at += run_bytes;
  }
  return at == body.size() ? absl::OkStatus() : Malformed("Get");
}

std::string EncodePut(PutCall call, absl::Span<const PutItemRecord> items) {
  call.count = static_cast<uint32_t>(items.size());
  std::string out;
  out.reserve(sizeof(call) + items.size() * sizeof(PutItemRecord));
  Append(call, &out);
  out.append(reinterpret_cast<const char*>(items.data()), items.size() * sizeof(PutItemRecord));
  return out;
}

absl::Status ParsePut(absl::string_view body, PutCall* call, absl::string_view* items) {
  if (body.size() < sizeof(PutCall)) {
    return absl::InvalidArgumentError("a local arena Put shorter than its fields");
  }
  *call = Read<PutCall>(body, 0);
  if (call->reserved != 0 || call->reserved2 != 0) {
    return absl::InvalidArgumentError("a local arena Put with non-zero reserved fields");
  }
  if (call->count == 0 || call->count > kMaxPutItems) {
    return absl::InvalidArgumentError(
        absl::StrCat("a local arena Put of ", call->count, " items (1 to ", kMaxPutItems, ")"));
  }
  const uint64_t record_bytes = uint64_t{call->count} * sizeof(PutItemRecord);
  if (body.size() - sizeof(PutCall) != record_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("a local arena Put of ", call->count,
                                                   " items with ", body.size(), " body bytes"));
  }
  *items = body.substr(sizeof(PutCall));
  return absl::OkStatus();
}

void AppendPutItem(PutItemReply item, const absl::Status& status, absl::string_view runs,
                   std::string* body) {
  const absl::string_view message = status.message().substr(0, kMaxItemMessage);
  if (item.code == 0) item.code = static_cast<int32_t>(status.code());
  item.message_bytes = static_cast<uint32_t>(message.size());
  item.run_count = static_cast<uint32_t>(runs.size() / sizeof(ucx::ArenaRun));
  Append(item, body);
  body->append(message.data(), message.size());
  body->append(runs.data(), runs.size());
}

absl::Status ParsePutReply(absl::string_view body, uint32_t expected,
                           const std::function<void(uint32_t, const PutItemReply&,
                                                    absl::string_view, absl::string_view)>& item,
                           absl::Status* call_status) {
  size_t at = 0;
  if (absl::Status s = ParseHead(body, expected, "Put", call_status, &at); !s.ok() || at == 0) {
    return s;
  }
  for (uint32_t i = 0; i < expected; ++i) {
    if (body.size() - at < sizeof(PutItemReply)) return Malformed("Put");
    const PutItemReply r = Read<PutItemReply>(body, at);
    at += sizeof(r);
    const uint64_t rest = uint64_t{r.message_bytes} + uint64_t{r.run_count} * sizeof(ucx::ArenaRun);
    if (body.size() - at < rest || r.message_bytes > kMaxItemMessage ||
        (r.code != 0 && r.code != kNotMapped && r.code != kOverBudget && !IsErrorCode(r.code))) {
      return Malformed("Put");
    }
    item(i, r, body.substr(at, r.message_bytes),
         body.substr(at + r.message_bytes, rest - r.message_bytes));
    at += rest;
  }
  return at == body.size() ? absl::OkStatus() : Malformed("Put");
}

std::string EncodeHelloReply(const absl::Status& status, const HelloReply& ok_fields) {
  HelloReply r = status.ok() ? ok_fields : HelloReply{};
  r.code = static_cast<int32_t>(status.code());
  r.message_bytes = static_cast<uint32_t>(status.message().size());
  std::string out;
  Append(r, &out);
  out.append(status.message().data(), status.message().size());
  return out;
}

absl::Status ParseHelloReply(absl::string_view body, HelloReply* reply) {
  if (body.size() < sizeof(HelloReply)) return Malformed("Hello");
  *reply = Read<HelloReply>(body, 0);
  if (body.size() - sizeof(HelloReply) != reply->message_bytes ||
      (reply->code != 0 && !IsErrorCode(reply->code))) {
    return Malformed("Hello");
  }
  if (reply->code == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(reply->code), body.substr(sizeof(HelloReply)));
}

}  // namespace kvstash::wire::local
