// Get over UCX: each found chunk goes back as one reply per contiguous run of its stored
// memory, sent from the stored bytes, or (direct clients) as where to read it in the
// shared arena, held until the client Releases the request.
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ucx/ucx_handlers.h"

namespace kvstash::server::ucx {
namespace {

using wire::ucx::GetFields;
using wire::ucx::GetItemRecord;
using wire::ucx::ReplyHeader;

// A reply to Get item `index` carrying the chunk's metadata.
ReplyHeader ChunkReply(const Request& req, uint32_t index, const storage::ChunkRef& chunk) {
  const storage::ChunkMeta& meta = chunk->meta();
  ReplyHeader reply = req.Reply(index);
  reply.size_bytes = meta.size_bytes;
  reply.checksum = chunk->checksum();
  reply.tokens = meta.tokens;
  reply.format = meta.format;
  return reply;
}

// Tells a direct client where chunk `index` lies in the arena, holding the chunk until the
// client releases the request. False (nothing sent) when it cannot be read directly.
bool SendDirect(const Request& req, uint32_t index, const storage::ChunkRef& chunk) {
  const uint64_t size = chunk->meta().size_bytes;
  if (!req.direct() || !DirectRoom(req, size)) return false;
  std::string runs = ArenaRuns(req.env().arena->data(), req.env().arena->size(), chunk->segments());
  if (runs.empty()) return false;  // not in the arena (read from NVMe)
  Connection& conn = *req.conn;
  auto [held, first] = conn.holds.try_emplace(req.header.request_id);
  if (first) req.worker->OpStarted();  // until released or the connection closes
  held->second.push_back(chunk);
  conn.direct_bytes += size;
  req.requests().metrics().AddDirectBytes(false, size);
  ReplyHeader reply = ChunkReply(req, index, chunk);
  reply.flags = wire::ucx::kFlagDirectRuns;
  req.worker->Send(req.conn, reply, nullptr, 0, std::move(runs), nullptr);
  return true;
}

// Sends chunk `index` as one reply per contiguous run of its stored memory.
void SendChunk(const Request& req, uint32_t index, const storage::ChunkRef& chunk) {
  ReplyHeader reply = ChunkReply(req, index, chunk);
  absl::Span<const storage::Segment> segs = chunk->segments();
  uint64_t offset = 0;
  for (size_t i = 0; i < segs.size();) {
    const uint8_t* start = segs[i].data;
    size_t run = segs[i].size;
    for (++i; i < segs.size() && start + run == segs[i].data; ++i) run += segs[i].size;
    reply.offset = offset;
    req.worker->Send(req.conn, reply, start, run, {}, chunk);
    offset += run;
  }
}

// Replies to item `i` of a Get (worker thread).
void ReplyToGetItem(const Request& req, const ActiveGet& call, uint32_t i, uint64_t capacity,
                    absl::StatusOr<storage::ChunkRef> fetched) {
  const absl::StatusOr<storage::ChunkRef> ref = call.Serve(std::move(fetched));
  if (!ref.ok()) {
    req.worker->SendError(req.conn, req.Reply(i), ref.status());
  } else if ((*ref)->meta().size_bytes > capacity) {
    ReplyHeader reply = req.Reply(i);
    reply.flags = wire::ucx::kFlagTooLarge;
    reply.size_bytes = (*ref)->meta().size_bytes;
    req.worker->Send(req.conn, reply, nullptr, 0, {}, nullptr);
  } else if (!SendDirect(req, i, *ref)) {
    SendChunk(req, i, *ref);
  }
}

// DRAM hits are answered at once; chunks on NVMe are read on the store's read threads and
// answered from this worker's mailbox when they arrive, in any order (replies carry the
// item index). The read threads touch only the store and the mailbox, never the worker,
// which may have stopped by then. The call is recorded with its last reply.
void ServeGet(const Request& req, const std::shared_ptr<ActiveGet>& call, const GetFields& g,
              absl::string_view body) {
  auto left = std::make_shared<uint32_t>(g.count);  // worker thread only
  for (uint32_t i = 0; i < g.count; ++i) {
    GetItemRecord rec;
    std::memcpy(&rec, body.data() + i * sizeof(rec), sizeof(rec));
    Key128 key;
    std::memcpy(key.data(), rec.key, key.size());
    req.worker->OpStarted();  // until the reply is handed to UCX
    auto reply = [req, call, i, capacity = rec.capacity,
                  left](absl::StatusOr<storage::ChunkRef> ref) {
      ReplyToGetItem(req, *call, i, capacity, std::move(ref));
      req.worker->OpEnded();  // after the send counted itself: in_flight() never dips to 0
      if (--*left == 0) call->End(absl::StatusCode::kOk);
    };
    call->Fetch(key, [box = req.worker->mailbox(),
                      reply = std::move(reply)](absl::StatusOr<storage::ChunkRef> ref) mutable {
      box->Run(
          [reply = std::move(reply), ref = std::move(ref)]() mutable { reply(std::move(ref)); });
    });
  }
}

}  // namespace

ucs_status_t HandleGet(const Request& req, const void* header, void* data, size_t length,
                       const ucp_am_recv_param_t* param) {
  const GetFields g = wire::ucx::ReadFields<GetFields>(header);
  absl::StatusOr<std::shared_ptr<ActiveGet>> call =
      req.requests().BeginGet(req.caller, req.NamespaceId(), g.count, g.lease_id, req.start);
  // What only this wire format can get wrong (an empty call included).
  const absl::Status s = call.ok() ? wire::ucx::CheckGetBody(g, length) : call.status();
  if (!s.ok()) {
    req.Fail(s);
    return UCS_OK;
  }
  return WithBody(req, data, length, param,
                  [call = *std::move(call), g](const Request& r, absl::string_view body) {
                    ServeGet(r, call, g, body);
                  });
}

void HandleRelease(const Request& req) {
  Connection& conn = *req.conn;
  auto it = conn.holds.find(req.header.request_id);
  if (it == conn.holds.end()) return;  // nothing held (or released already): no reply either way
  for (const storage::ChunkRef& chunk : it->second) conn.direct_bytes -= chunk->meta().size_bytes;
  conn.holds.erase(it);
  req.worker->OpEnded();
}

}  // namespace kvstash::server::ucx
