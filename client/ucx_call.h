// UcxChannel's state of the call in progress, shared by ucx_channel.cc (connection, unary
// calls, receives), ucx_chunks.cc (Put and Get) and ucx_direct.cc (reads and writes in the
// daemon's arena).
//
// Thread-safety: owned by the channel's one caller at a time, as UcxChannel is.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "client/ucx_channel.h"
#include "proto/status_map.h"

namespace kvstash::client_internal {

// The longest Put header: with the hints block (kFlagPutHints).
constexpr size_t kPutHeaderBytes = sizeof(wire::ucx::RequestHeader) + sizeof(wire::ucx::PutFields) +
                                   sizeof(wire::ucx::PutHintsFields);
constexpr size_t kGetHeaderBytes = sizeof(wire::ucx::RequestHeader) + sizeof(wire::ucx::GetFields);
constexpr size_t kCommitHeaderBytes =
    sizeof(wire::ucx::RequestHeader) + sizeof(wire::ucx::CommitFields);

// The message of an error reply: its body, unless that is still to be received (rendezvous).
inline std::string ReplyMessage(const void* data, size_t length, bool rndv) {
  return rndv ? "(message not received)" : std::string(static_cast<const char*>(data), length);
}

inline absl::Status ErrorOf(const wire::ucx::ReplyHeader& h, const void* data, size_t length,
                            bool rndv) {
  return wire::FromCode(h.code, ReplyMessage(data, length, rndv));
}

struct UcxChannel::Call {
  uint8_t op = 0;
  uint64_t id = 0;
  bool replied = false;  // unary: the reply arrived
  absl::Status status;   // whole-request outcome
  std::string body;      // unary reply body
  absl::Span<PutItem> put_items;
  size_t replies = 0;  // Put replies, one per item
  absl::Span<GetItem> get_items;
  std::vector<uint64_t> received;  // Get: bytes in so far, per item
  size_t items_done = 0;
  const MemhLookup* memh = nullptr;
  std::vector<std::array<uint8_t, kPutHeaderBytes>> put_headers;
  std::array<uint8_t, kGetHeaderBytes> get_header{};
  std::vector<wire::ucx::GetItemRecord> get_records;
  std::vector<std::array<uint8_t, kCommitHeaderBytes>> commit_headers;  // direct Put
  bool direct_reads = false;  // Get: some chunks were read from the arena (Release them)
  std::vector<ParallelCopier::Range> direct_copies;  // Get: from the arena, once all replied
  std::vector<uint32_t> direct_items;                // Get: the items those copies fill
  wire::ucx::RequestHeader release_header{};
};

}  // namespace kvstash::client_internal
