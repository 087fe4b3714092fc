// ArenaServer's Puts: each chunk is reserved in the arena and the client told where it
// lies; it writes the chunks there and sends a Commit, which stores them (the checksum
// policy as for any Put) and answers with their results.
// clang-format off: the header this file implements comes first.
#include "server/local/arena_server.h"
// clang-format on

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/arena_runs.h"
#include "server/local/arena_connection.h"
#include "server/wire_put.h"

namespace kvstash::server {
namespace {

using LocalOp = wire::local::Op;
using wire::local::PutItemReply;

// What a Put or Commit reply needs at most for an item besides its runs.
constexpr size_t kItemBytes = sizeof(PutItemReply) + wire::local::kMaxItemMessage;

// The chunk headers of a Put's records (their views point into `records`), or the first
// rule one breaks: the whole call fails, as over gRPC.
absl::Status Headers(const Requests& requests, absl::Span<const wire::local::PutItemRecord> records,
                     std::vector<PutChunkHeader>* out) {
  out->reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    if (absl::Status s = wire::ucx::CheckPutHints(records[i].hints); !s.ok()) return s;
    PutChunkHeader h = PutHeaderFromWire(records[i].fields, records[i].hints);
    h.index = static_cast<uint32_t>(i);
    h.count = static_cast<uint32_t>(records.size());
    if (absl::Status s = requests.CheckPutChunk(h); !s.ok()) return s;
    out->push_back(h);
  }
  return absl::OkStatus();
}

}  // namespace

bool ArenaServer::Put(Connection* conn, uint64_t request_id, absl::string_view body) {
  const TransportMetrics::Clock::time_point start = TransportMetrics::Clock::now();
  requests_.metrics().AddReceivedBytes(sizeof(wire::local::FrameHeader) + body.size());
  wire::local::PutCall call{};
  absl::string_view bytes;
  absl::Status s =
      conn->greeted ? requests_.Admit() : absl::FailedPreconditionError("Put before Hello");
  if (s.ok()) s = wire::local::ParsePut(body, &call, &bytes);
  if (s.ok() && conn->reservations.contains(request_id)) {
    s = absl::InvalidArgumentError(
        absl::StrCat("Put ", request_id, " is still waiting for its Commit"));
  }
  std::vector<wire::local::PutItemRecord> records;
  std::vector<PutChunkHeader> headers;
  if (s.ok()) {
    records.resize(call.count);
    std::memcpy(records.data(), bytes.data(), bytes.size());
    s = Headers(requests_, records, &headers);
  }
  absl::StatusOr<CallAuth> caller = absl::UnknownError("");
  if (s.ok()) {
    caller = requests_.Authenticate(Op::kPut, conn->token);
    s = caller.status();
  }
  absl::StatusOr<Key128> ns = absl::UnknownError("");
  if (s.ok()) {
    const absl::string_view id(reinterpret_cast<const char*>(call.namespace_id),
                               sizeof(call.namespace_id));
    ns = requests_.ResolveNamespace(*caller, id, auth::Access::kWrite);
    s = ns.status();
  }
  std::string reply;
  if (s.ok()) {
    reply = ServePut(conn, request_id, *caller, *ns, headers, start);
  } else {
    requests_.LogRefused(Op::kPut, s, "local arena");
    requests_.RecordCall(Op::kPut, s.code(), start);
    reply = wire::local::EncodeCallError(s);
  }
  return Send(conn, LocalOp::kPut, request_id, reply) && conn->greeted;
}

std::string ArenaServer::ServePut(Connection* conn, uint64_t request_id, const CallAuth& caller,
                                  const Key128& ns, absl::Span<const PutChunkHeader> headers,
                                  TransportMetrics::Clock::time_point start) {
  std::string body = wire::local::EncodeCallReply(static_cast<uint32_t>(headers.size()));
  ArenaConnection::Reserved reserved{caller, start, {}};
  for (size_t i = 0; i < headers.size(); ++i) {
    // The budget is taken before the chunk is reserved (and charged to the caller's byte
    // rate), so an item asked for again in a later round is charged once.
    const uint64_t size = headers[i].meta.size_bytes;
    PutItemReply r{};
    if (!Charge(conn, size)) {
      r.code = wire::local::kOverBudget;
      wire::local::AppendPutItem(r, absl::OkStatus(), "", &body);
      continue;
    }
    PutChunk chunk = requests_.BeginPut(caller, ns, headers[i]);
    if (chunk.pending() == nullptr) {  // already present, or refused by the store
      Uncharge(conn, size);
      const absl::Status s = chunk.Finish();
      if (chunk.already_present()) r.flags = wire::local::kAlreadyPresent;
      wire::local::AppendPutItem(r, s, "", &body);
      continue;
    }
    // The reply stays within the frame limit: what the items after this one need at most.
    const size_t room =
        wire::local::kMaxBodyBytes - body.size() - (headers.size() - i) * kItemBytes;
    std::string runs = ArenaRuns(arena_.data, arena_.size, chunk.pending()->segments());
    if (runs.empty()) {
      r.code = wire::local::kNotMapped;  // not in the arena: the client sends it otherwise
    } else if (runs.size() > room + wire::local::kMaxItemMessage) {
      r.code = wire::local::kOverBudget;
    }
    if (r.code != 0) {  // the reservation is dropped with `chunk`
      Uncharge(conn, size);
      wire::local::AppendPutItem(r, absl::OkStatus(), "", &body);
      continue;
    }
    wire::local::AppendPutItem(r, absl::OkStatus(), runs, &body);
    reserved.chunks.push_back(std::move(chunk));
  }
  if (reserved.chunks.empty()) {
    requests_.RecordCall(Op::kPut, absl::StatusCode::kOk, start);
  } else {
    conn->reservations.emplace(request_id, std::move(reserved));
  }
  return body;
}

bool ArenaServer::Commit(Connection* conn, uint64_t request_id) {
  auto it = conn->reservations.find(request_id);
  if (it == conn->reservations.end()) {
    const absl::Status s = absl::InvalidArgumentError(
        absl::StrCat("Commit ", request_id, " names no Put of this connection waiting for one"));
    requests_.LogRefused(Op::kPut, s, "local arena");
    requests_.RecordCall(Op::kPut, s.code(), TransportMetrics::Clock::now());
    return Send(conn, LocalOp::kCommit, request_id, wire::local::EncodeCallError(s)) &&
           conn->greeted;
  }
  ArenaConnection::Reserved reserved = std::move(it->second);
  conn->reservations.erase(it);
  std::string body = wire::local::EncodeCallReply(static_cast<uint32_t>(reserved.chunks.size()));
  for (PutChunk& chunk : reserved.chunks) {
    const uint64_t size = chunk.pending()->meta().size_bytes;
    chunk.pending()->MarkWritten(size);
    requests_.metrics().AddDirectBytes(true, size);
    const absl::Status s = chunk.Finish();
    Uncharge(conn, size);
    PutItemReply r{};
    if (chunk.already_present()) r.flags = wire::local::kAlreadyPresent;
    wire::local::AppendPutItem(r, s, "", &body);
  }
  requests_.RecordCall(Op::kPut, absl::StatusCode::kOk, reserved.start);
  return Send(conn, LocalOp::kCommit, request_id, body);
}

}  // namespace kvstash::server
