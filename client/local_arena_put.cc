// LocalArena's Puts: one request reserves every chunk of a round in the daemon's arena,
// the client copies each into the runs the reply names, and one Commit stores them all.
#include <atomic>
#include <cstring>
#include <utility>

#include "client/local_arena.h"
#include "client/local_arena_state.h"
#include "client/messages.h"
#include "client/wire_convert.h"
#include "proto/status_map.h"

namespace kvstash::client_internal {
namespace {

using LocalOp = wire::local::Op;

// Records a decided result (code 0 or a status code) in `item`.
void SetResult(const wire::local::PutItemReply& r, absl::string_view message, PutItem* item) {
  item->status = wire::FromCode(r.code, message);
  item->already_present = r.code == 0 && (r.flags & wire::local::kAlreadyPresent) != 0;
}

}  // namespace

absl::StatusOr<bool> LocalArena::PutRound(absl::Time deadline, const Key128& ns,
                                          absl::Span<PutItem> items,
                                          absl::Span<const uint64_t> checksums,
                                          const std::vector<size_t>& which,
                                          std::vector<size_t>* over, std::vector<size_t>* rest) {
  if (which.size() > wire::local::kMaxPutItems) {
    return absl::InvalidArgumentError("a batch too large for one local arena request");
  }
  if (absl::Now() >= deadline) return absl::DeadlineExceededError("no time left");
  std::vector<wire::local::PutItemRecord> records(which.size());
  for (size_t k = 0; k < which.size(); ++k) {
    const PutItem& item = items[which[k]];
    wire::ucx::PutFields& f = records[k].fields;
    std::memcpy(f.key, item.key.data(), sizeof(f.key));
    f.size_bytes = item.size;
    f.checksum = checksums[which[k]];
    f.tokens = item.tokens;
    f.format = item.format;
    f.index = static_cast<uint32_t>(k);
    f.count = static_cast<uint32_t>(which.size());
    if (HasHints(item.hints)) records[k].hints = HintsToUcx(item.hints);
  }
  wire::local::PutCall call_fields{};
  std::memcpy(call_fields.namespace_id, ns.data(), sizeof(call_fields.namespace_id));
  std::unique_ptr<Connection> conn = Take(deadline);
  if (conn == nullptr) return absl::UnavailableError("no local arena connection");
  if (!conn->mapping->writable) {
    Give(std::move(conn));
    return absl::FailedPreconditionError("the arena is mapped for reading only");
  }
  const uint64_t id = next_request_id_.fetch_add(1);
  absl::StatusOr<std::string> reply =
      Exchange(&conn, LocalOp::kPut, id, wire::local::EncodePut(call_fields, records), deadline);
  if (!reply.ok()) return reply.status();
  std::vector<size_t> reserved;
  absl::Status call;
  const size_t first_rest = rest->size();
  absl::Status s = ApplyPut(*conn->mapping, *reply, items, which, over, rest, &reserved, &call);
  if (s.ok() && !reserved.empty()) {
    // Every byte written must be visible to the daemon once it reads the Commit (the
    // streaming copies' non-temporal stores included).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    reply = Exchange(&conn, LocalOp::kCommit, id, "", deadline);
    s = reply.ok()
            ? wire::local::ParsePutReply(
                  *reply, static_cast<uint32_t>(reserved.size()),
                  [&](uint32_t k, const wire::local::PutItemReply& r, absl::string_view message,
                      absl::string_view) { SetResult(r, message, &items[which[reserved[k]]]); },
                  &call)
            : reply.status();
    if (s.ok() && !call.ok()) s = absl::InternalError("kvstashd refused a Commit it asked for");
  }
  if (!s.ok()) {
    if (conn != nullptr) Broke(std::move(conn), s);  // closing drops what it reserved
    over->clear();
    rest->resize(first_rest);  // the caller sends all of `which` another way
    for (size_t i : which) ResetPutResults(items.subspan(i, 1));
    return s;
  }
  Give(std::move(conn));
  // A call refused as a whole (a right, a limit, draining): gRPC gets the same answer.
  if (!call.ok()) {
    rest->resize(first_rest);
    return call;
  }
  return !reserved.empty();
}

absl::Status LocalArena::ApplyPut(const Mapping& mapping, absl::string_view reply,
                                  absl::Span<PutItem> items, const std::vector<size_t>& which,
                                  std::vector<size_t>* over, std::vector<size_t>* rest,
                                  std::vector<size_t>* reserved, absl::Status* call) {
  bool runs_ok = true;
  std::vector<ParallelCopier::Range> copies;
  absl::Status s = wire::local::ParsePutReply(
      reply, static_cast<uint32_t>(which.size()),
      [&](uint32_t k, const wire::local::PutItemReply& r, absl::string_view message,
          absl::string_view runs) {
        PutItem& item = items[which[k]];
        if (r.code == wire::local::kNotMapped) {
          rest->push_back(which[k]);
        } else if (r.code == wire::local::kOverBudget) {
          over->push_back(which[k]);
        } else if (r.code != 0 || r.run_count == 0) {
          SetResult(r, message, &item);
        } else if (runs_ok && PlanCopyIn(mapping, runs, item, &copies)) {
          reserved->push_back(k);
        } else {
          runs_ok = false;
        }
      },
      call);
  if (s.ok() && !runs_ok) {
    s = absl::InternalError("kvstashd named arena bytes that do not match the chunk");
  }
  // One batch, so the copy threads share small chunks too. Streaming: the chunks are not
  // read again here, so they need not displace the cache.
  if (s.ok()) copier_.CopyAll(copies, /*streaming=*/true);
  return s;
}

bool LocalArena::PlanCopyIn(const Mapping& mapping, absl::string_view runs, const PutItem& item,
                            std::vector<ParallelCopier::Range>* copies) {
  std::vector<absl::Span<uint8_t>> spans = mapping.view->Spans(runs, item.size);
  if (spans.empty()) return false;
  mapping.view->PlanWrites(spans, item.data, copies);
  return true;
}

}  // namespace kvstash::client_internal
