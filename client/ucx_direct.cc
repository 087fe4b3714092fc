// UcxChannel's direct access to the daemon's DRAM arena: mapping it, and Put/Get copies
// straight into and out of it (ClientOptions::ucx_direct).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "client/ucx_call.h"
#include "client/ucx_channel.h"

namespace kvstash::client_internal {
namespace {

using wire::ucx::ReplyHeader;
using WireOp = wire::ucx::Op;

}  // namespace

void UcxChannel::MapArena(absl::string_view body) {
  wire::ucx::ArenaInfo info;
  if (body.size() <= sizeof(info)) return;  // the daemon shares no arena
  std::memcpy(&info, body.data(), sizeof(info));
  ucp_rkey_h rkey = nullptr;
  if (ucp_ep_rkey_unpack(ep_, body.data() + sizeof(info), &rkey) != UCS_OK) return;
  void* local = nullptr;
  // Fails unless a shared-memory transport reaches the daemon (same host, in both lists).
  if (ucp_rkey_ptr(rkey, info.address, &local) != UCS_OK) {
    ucp_rkey_destroy(rkey);
    return;
  }
  arena_rkey_ = rkey;
  arena_ = std::make_unique<ArenaView>(static_cast<uint8_t*>(local), info.size);
}

std::vector<absl::Span<uint8_t>> UcxChannel::ArenaSpans(absl::string_view body, uint64_t size) {
  std::vector<absl::Span<uint8_t>> spans = arena_->Spans(body, size);
  if (!spans.empty()) return spans;
  broken_ = true;
  broken_reason_ =
      "kvstashd named arena bytes that do not match the chunk or lie outside the arena";
  return {};
}

void UcxChannel::WriteDirect(const ReplyHeader& h, absl::string_view runs) {
  Call& c = *call_;
  const PutItem& item = c.put_items[h.index];
  std::vector<absl::Span<uint8_t>> spans = ArenaSpans(runs, item.size);
  if (spans.empty()) return;  // broken: the call ends UNAVAILABLE
  std::vector<ParallelCopier::Range> copies;
  arena_->PlanWrites(spans, item.data, &copies);
  copier_->CopyAll(copies, /*streaming=*/true);
  // The daemon must see every byte once it sees the Commit (a streaming CopyAll ends with
  // the store fence its non-temporal stores need on x86).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (c.commit_headers.empty()) c.commit_headers.resize(c.put_items.size());
  const wire::ucx::RequestHeader rh = wire::ucx::MakeRequestHeader(WireOp::kCommit, c.id, nullptr);
  const wire::ucx::CommitFields f{h.handle, h.index, 0};
  uint8_t* hdr = c.commit_headers[h.index].data();
  std::memcpy(hdr, &rh, sizeof(rh));
  std::memcpy(hdr + sizeof(rh), &f, sizeof(f));
  (void)SendRequest(hdr, kCommitHeaderBytes, nullptr, 0, nullptr);  // failure: channel broken
}

void UcxChannel::ResendPlain(uint32_t index) {
  Call& c = *call_;
  const PutItem& item = c.put_items[index];
  uint8_t* hdr = c.put_headers[index].data();
  wire::ucx::RequestHeader rh;
  std::memcpy(&rh, hdr, sizeof(rh));
  rh.flags &= ~wire::ucx::kFlagDirect;
  std::memcpy(hdr, &rh, sizeof(rh));
  const MemhLookup& memh = *c.memh;
  (void)SendRequest(hdr, wire::ucx::RequestHeaderLength(wire::ucx::Op::kPut, rh.flags), item.data,
                    item.size, memh ? memh(item.data, item.size) : nullptr);
}

void UcxChannel::ReadDirect(const ReplyHeader& h, absl::string_view runs) {
  Call& c = *call_;
  GetItem& item = c.get_items[h.index];
  std::vector<absl::Span<uint8_t>> spans = ArenaSpans(runs, h.size_bytes);
  if (spans.empty()) return;
  c.direct_reads = true;
  // Copied once every reply is in (CopyDirectReads), as one batch the copy threads share.
  arena_->PlanReads(spans, item.data, &c.direct_copies);
  c.direct_items.push_back(h.index);
  ++c.items_done;
}

void UcxChannel::CopyDirectReads() {
  Call& c = *call_;
  // Plain memcpy, unlike WriteDirect: the caller's buffer is usually one it reuses (a
  // staging buffer), so it is in cache and about to be read. Non-temporal stores would push
  // it out to memory: 4 MiB gets from a 128 MiB working set measured 5.6-6.1 GB/s with
  // them, 6.1-6.5 GB/s without.
  copier_->CopyAll(c.direct_copies, /*streaming=*/false);
  for (uint32_t i : c.direct_items) c.get_items[i].status = absl::OkStatus();
}

}  // namespace kvstash::client_internal
