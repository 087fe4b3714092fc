// The local arena protocol (docs/protocol.md, "Local arena"): how a client on the daemon's
// host, reaching it through server.local_socket, is handed the DRAM arena as a file
// descriptor and told where the chunks it asks for lie in it. It runs on its own Unix
// stream socket (ArenaSocketPath), beside the gRPC socket: descriptors can only travel
// on a socket this daemon reads itself, and the connection's life bounds what the client
// holds. Client and server share this file so the two cannot drift.
//
// Every message is a FrameHeader then `body_bytes` of body. A connection starts with a
// Hello (body: the bearer token); its reply carries the arena's descriptor (SCM_RIGHTS).
// Each Get (GetFields + GetItemRecords) is answered by one reply listing, per item, where
// the chunk lies (ArenaRuns), held unchanged until the client sends Release with the same
// request id or closes the connection.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/ucx_wire.h"

namespace kvstash::wire::local {

inline constexpr uint32_t kMagic = 0x414C564B;  // "KVLA" read as little-endian bytes
inline constexpr uint8_t kVersion = 1;
// How long either side polls for the next message before its thread sleeps: replies,
// Releases and next Gets follow within tens of microseconds, about what waking a sleeping
// thread costs.
inline constexpr int kSpinMicros = 50;
// The largest body either side accepts: a Get of 100,000 keys fits, and so does its reply.
inline constexpr uint32_t kMaxBodyBytes = 16 << 20;

enum class Op : uint8_t {
  kHello = 1,    // body: the bearer token (may be empty); reply: HelloReply + message
  kGet = 2,      // body: GetFields + GetItemRecords; reply: GetReply + ItemReplies or message
  kRelease = 3,  // no body: the client copied Get `request_id`'s chunks; no reply
};

// ItemReply.code values besides 0 (the runs follow) and canonical status codes (> 0).
inline constexpr int32_t kNotMapped = -1;   // not in the arena (e.g. on NVMe): read it otherwise
inline constexpr int32_t kTooLarge = -2;    // larger than the capacity sent; size_bytes says
inline constexpr int32_t kOverBudget = -3;  // more than may be held now: ask after a Release

#pragma pack(push, 1)
// Starts every message. 24 bytes.
struct FrameHeader {
  uint32_t magic;
  uint8_t version;
  uint8_t op;         // Op
  uint16_t reserved;  // 0
  uint32_t body_bytes;
  uint32_t reserved2;   // 0
  uint64_t request_id;  // the client's; a reply echoes it
};
// Body of the Hello reply, followed by `message_bytes` of message when code != 0. With
// code 0 the arena's descriptor (read-only) comes with the reply. 32 bytes.
struct HelloReply {
  int32_t code;  // absl::StatusCode
  uint32_t message_bytes;
  uint64_t arena_bytes;  // how much of the file to map
  uint64_t file_offset;  // where the arena starts in the file (page-aligned)
  uint64_t arena_id;     // differs between daemon runs: a new Hello, a new mapping
};
// Body of a Get, followed by `count` ucx::GetItemRecord. 32 bytes.
struct GetFields {
  uint8_t namespace_id[16];
  uint64_t lease_id;  // 0: none
  uint32_t count;
  uint32_t reserved;  // 0
};
// Body of a Get reply: code 0 and `items` ItemReplies, or the whole call's error code and
// `message_bytes` of message. 16 bytes.
struct GetReply {
  int32_t code;
  uint32_t items;
  uint32_t message_bytes;
  uint32_t reserved;  // 0
};
// One item of a Get reply, followed by `run_count` ucx::ArenaRun (code 0 only). 32 bytes.
struct ItemReply {
  int32_t code;  // 0, kNotMapped, kTooLarge, or the item's absl::StatusCode
  uint32_t run_count;
  uint64_t size_bytes;
  uint64_t checksum;  // XXH3-64 of the chunk
  uint32_t tokens;
  uint32_t format;
};
#pragma pack(pop)

static_assert(sizeof(FrameHeader) == 24);
static_assert(sizeof(HelloReply) == 32);
static_assert(sizeof(GetFields) == 32);
static_assert(sizeof(GetReply) == 16);
static_assert(sizeof(ItemReply) == 32);

// A whole message: the header for `op` and `request_id`, then `body`. REQUIRES:
// body.size() <= kMaxBodyBytes.
std::string EncodeFrame(Op op, uint64_t request_id, absl::string_view body);
// Checks a received header: INVALID_ARGUMENT for a bad magic, version or op, or a body
// larger than kMaxBodyBytes (the connection cannot be read further).
absl::Status CheckFrameHeader(const FrameHeader& h);

// The most items one Get may name: their reply must fit kMaxBodyBytes.
inline constexpr uint32_t kMaxGetItems = (kMaxBodyBytes - sizeof(GetReply)) / sizeof(ItemReply);

// A Get body for `fields` (its count is set from `items`) and `items`.
std::string EncodeGet(GetFields fields, absl::Span<const ucx::GetItemRecord> items);
// Splits a Get body: INVALID_ARGUMENT when it is not GetFields and `count` records, or
// `count` exceeds kMaxGetItems.
// `*items` points into `body`.
absl::Status ParseGet(absl::string_view body, GetFields* fields, absl::string_view* items);

// A reply failing the whole Get with `status` (not OK).
std::string EncodeGetError(const absl::Status& status);
// Appends one item to a Get reply body under construction (after a GetReply).
void AppendItem(const ItemReply& item, absl::string_view runs, std::string* body);

// Reads a Get reply body of `expected` items, calling `item(index, reply, runs)` for each;
// `runs` points into `body`. A reply failing the whole call sets `*call_status` (else OK).
// INTERNAL only for a body that does not parse or answers another number of items.
absl::Status ParseGetReply(
    absl::string_view body, uint32_t expected,
    const std::function<void(uint32_t, const ItemReply&, absl::string_view)>& item,
    absl::Status* call_status);
// True for the canonical status codes a reply may carry (1..16).
inline bool IsErrorCode(int32_t code) { return code > 0 && code <= 16; }

// The Hello reply body, with `status`'s code and message when it is not OK.
std::string EncodeHelloReply(const absl::Status& status, const HelloReply& ok_fields);
// Splits a Hello reply: the daemon's refusal as a status (its code and message), INTERNAL
// for a body that does not parse.
absl::Status ParseHelloReply(absl::string_view body, HelloReply* reply);

}  // namespace kvstash::wire::local
