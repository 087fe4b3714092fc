// UcxChannel's Put and Get: one request message per Put item (or one Get request for every
// item) and the replies that fill the caller's items; the replies' per-chunk rules come
// from messages.h, as they do for gRPC.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "client/messages.h"
#include "client/ucx_call.h"
#include "client/ucx_channel.h"
#include "client/wire_convert.h"

namespace kvstash::client_internal {
namespace {

using wire::ucx::ReplyHeader;
using WireOp = wire::ucx::Op;

}  // namespace

absl::Status UcxChannel::Put(const Key128& ns, absl::Span<PutItem> items,
                             absl::Span<const uint64_t> checksums, const MemhLookup& memh,
                             absl::Time deadline) {
  call_ = std::make_unique<Call>();
  call_->op = static_cast<uint8_t>(WireOp::kPut);
  call_->id = next_request_id_++;
  call_->put_items = items;
  call_->put_headers.resize(items.size());
  call_->memh = &memh;
  ResetPutResults(items);
  wire::ucx::RequestHeader h = wire::ucx::MakeRequestHeader(WireOp::kPut, call_->id, ns.data());
  for (size_t i = 0; i < items.size(); ++i) {
    const PutItem& item = items[i];
    wire::ucx::PutFields f{};
    std::memcpy(f.key, item.key.data(), sizeof(f.key));
    f.size_bytes = item.size;
    f.checksum = checksums[i];
    f.tokens = item.tokens;
    f.format = item.format;
    f.index = static_cast<uint32_t>(i);
    f.count = static_cast<uint32_t>(items.size());
    const bool direct = arena_ != nullptr && item.size >= kDirectPutMin;
    const bool hints = HasHints(item.hints);
    h.flags = (direct ? wire::ucx::kFlagDirect : 0) | (hints ? wire::ucx::kFlagPutHints : 0);
    uint8_t* hdr = call_->put_headers[i].data();
    std::memcpy(hdr, &h, sizeof(h));
    std::memcpy(hdr + sizeof(h), &f, sizeof(f));
    if (hints) {
      const wire::ucx::PutHintsFields hf = HintsToUcx(item.hints);
      std::memcpy(hdr + sizeof(h) + sizeof(f), &hf, sizeof(hf));
    }
    const size_t hdr_bytes = wire::ucx::RequestHeaderLength(WireOp::kPut, h.flags);
    absl::Status s = direct ? SendRequest(hdr, hdr_bytes, nullptr, 0, nullptr)
                            : SendRequest(hdr, hdr_bytes, item.data, item.size,
                                          memh ? memh(item.data, item.size) : nullptr);
    if (!s.ok()) return s;
  }
  const size_t n = items.size();
  if (absl::Status s = WaitFor([this, n] { return call_->replies == n; }, deadline); !s.ok()) {
    return s;
  }
  return call_->status;
}

absl::Status UcxChannel::Get(const Key128& ns, absl::Span<GetItem> items, uint64_t lease_id,
                             const MemhLookup& memh, absl::Time deadline) {
  call_ = std::make_unique<Call>();
  Call& c = *call_;
  c.op = static_cast<uint8_t>(WireOp::kGet);
  c.id = next_request_id_++;
  c.get_items = items;
  c.memh = &memh;
  c.received.assign(items.size(), 0);
  c.get_records.resize(items.size());
  ResetGetResults(items);
  for (size_t i = 0; i < items.size(); ++i) {
    std::memcpy(c.get_records[i].key, items[i].key.data(), 16);
    c.get_records[i].capacity = items[i].data == nullptr ? 0 : items[i].capacity;
  }
  wire::ucx::RequestHeader h = wire::ucx::MakeRequestHeader(WireOp::kGet, c.id, ns.data());
  if (arena_ != nullptr) h.flags = wire::ucx::kFlagDirect;
  wire::ucx::GetFields g{};
  g.lease_id = lease_id;
  g.count = static_cast<uint32_t>(items.size());
  std::memcpy(c.get_header.data(), &h, sizeof(h));
  std::memcpy(c.get_header.data() + sizeof(h), &g, sizeof(g));
  absl::Status s = SendRequest(c.get_header.data(), kGetHeaderBytes, c.get_records.data(),
                               c.get_records.size() * sizeof(wire::ucx::GetItemRecord), nullptr);
  if (!s.ok()) return s;
  const size_t n = items.size();
  s = WaitFor([this, n] { return !call_->status.ok() || call_->items_done == n; }, deadline);
  if (!s.ok()) return s;
  if (c.status.ok()) CopyDirectReads();
  if (c.direct_reads) {  // the daemon holds those chunks until told they were copied
    c.release_header = wire::ucx::MakeRequestHeader(WireOp::kRelease, c.id, nullptr);
    s = SendRequest(&c.release_header, sizeof(c.release_header), nullptr, 0, nullptr);
    if (s.ok()) s = WaitFor([] { return true; }, deadline);
    if (!s.ok()) return s;
  }
  return c.status;
}

void UcxChannel::OnPutReply(const ReplyHeader& h, void* data, size_t length,
                            const ucp_am_recv_param_t* param, ucs_status_t* result) {
  Call& c = *call_;
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (h.code == 0 && h.index < c.put_items.size()) {
    if ((h.flags & wire::ucx::kFlagDirectRuns) != 0) {
      return WithBody(
          data, length, rndv, [this, h](absl::string_view runs) { WriteDirect(h, runs); }, result);
    }
    if ((h.flags & wire::ucx::kFlagSendPayload) != 0) return ResendPlain(h.index);
  }
  ++c.replies;
  const absl::Status s = h.code == 0 ? absl::OkStatus() : ErrorOf(h, data, length, rndv);
  if (h.index == wire::ucx::kWholeRequest) {
    if (c.status.ok()) c.status = s;
  } else if (h.index < c.put_items.size()) {
    c.put_items[h.index].status = s;
    c.put_items[h.index].already_present = (h.flags & wire::ucx::kFlagAlreadyPresent) != 0;
  }
}

void UcxChannel::OnGetReply(const ReplyHeader& h, void* data, size_t length,
                            const ucp_am_recv_param_t* param, ucs_status_t* result) {
  Call& c = *call_;
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (h.index == wire::ucx::kWholeRequest) {
    c.status = ErrorOf(h, data, length, rndv);
    if (c.status.ok()) c.status = absl::InternalError("Get failed without a code");
    return;
  }
  if (h.index >= c.get_items.size()) return;
  GetItem& item = c.get_items[h.index];
  if (h.code != 0) {
    item.status = GetChunkError(item.key, h.code, ReplyMessage(data, length, rndv));
    ++c.items_done;
    return;
  }
  if ((h.flags & wire::ucx::kFlagTooLarge) != 0) {
    item.size = h.size_bytes;
    item.status = TooLargeError(item, h.size_bytes);
    ++c.items_done;
    return;
  }
  // A direct reply's body lists arena runs (ArenaSpans checks them), not payload bytes.
  const bool direct = (h.flags & wire::ucx::kFlagDirectRuns) != 0;
  if (h.size_bytes > item.capacity || (!direct && h.offset + length > h.size_bytes)) {
    broken_ = true;
    broken_reason_ = absl::StrCat("kvstashd sent bytes [", h.offset, ", ", h.offset + length,
                                  ") of a ", h.size_bytes, "-byte chunk into ", item.capacity);
    return;
  }
  AcceptGetChunk(ChunkMeta{h.size_bytes, h.tokens, h.format, h.checksum}, &item);
  if (direct) {
    return WithBody(
        data, length, rndv, [this, h](absl::string_view runs) { ReadDirect(h, runs); }, result);
  }
  const uint32_t index = h.index;
  ucp_mem_h memh = *c.memh ? (*c.memh)(item.data, item.capacity) : nullptr;
  ReceiveInto(
      data, static_cast<uint8_t*>(item.data) + h.offset, length, rndv, memh,
      [this, index, length](ucs_status_t s) {
        if (s != UCS_OK) return;  // the endpoint failed; the call ends UNAVAILABLE
        Call& call = *call_;
        call.received[index] += length;
        if (call.received[index] == call.get_items[index].size) {
          call.get_items[index].status = absl::OkStatus();
          ++call.items_done;
        }
      },
      result);
}

}  // namespace kvstash::client_internal
