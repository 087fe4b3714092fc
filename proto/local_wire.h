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
// request id or closes the connection. Each Put (PutCall + PutItemRecords) is answered with
// where each chunk it reserved lies; the client writes them there and sends a Commit with the
// same request id, answered with their results (a connection closing first drops them).
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
  kGet = 2,      // body: GetFields + GetItemRecords; reply: CallReply + ItemReplies or message
  kRelease = 3,  // no body: the client copied Get `request_id`'s chunks; no reply
  kPut = 4,      // body: PutCall + PutItemRecords; reply: CallReply + PutItemReplies or message
  kCommit = 5,   // no body: Put `request_id`'s reserved chunks are written; reply: CallReply +
                 // a PutItemReply per reserved chunk, in order
};

// ItemReply.code values besides 0 (the runs follow) and canonical status codes (> 0).
inline constexpr int32_t kNotMapped = -1;   // not in the arena (e.g. on NVMe): read it otherwise
inline constexpr int32_t kTooLarge = -2;    // larger than the capacity sent; size_bytes says
inline constexpr int32_t kOverBudget = -3;  // more than may be held now: ask after a Release
// PutItemReply.flags: the key was stored already (code 0).
inline constexpr uint32_t kAlreadyPresent = 1;
// The longest item message a Put or Commit reply carries; longer ones are cut.
inline constexpr uint32_t kMaxItemMessage = 256;

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
// Body of a Get, Put or Commit reply: code 0 and `items` item replies, or the whole call's
// error code and `message_bytes` of message. 16 bytes.
struct CallReply {
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
// Body of a Put, followed by `count` PutItemRecords. 32 bytes.
struct PutCall {
  uint8_t namespace_id[16];
  uint32_t count;
  uint32_t reserved;   // 0
  uint64_t reserved2;  // 0
};
// One chunk of a Put: its fields (`index` and `count` as the record's position and the
// call's size) and hints (all zero: none). 80 bytes.
struct PutItemRecord {
  ucx::PutFields fields;
  ucx::PutHintsFields hints;
};
// One item of a Put or Commit reply, followed by `message_bytes` of message, then (Put, code
// 0) `run_count` ucx::ArenaRun: where to write the reserved chunk before the Commit. Code 0
// without runs is a result already decided (stored before: kAlreadyPresent). 16 bytes.
struct PutItemReply {
  int32_t code;  // 0, kNotMapped, kOverBudget, or the item's absl::StatusCode
  uint32_t run_count;
  uint32_t flags;  // kAlreadyPresent
  uint32_t message_bytes;
};
#pragma pack(pop)

static_assert(sizeof(FrameHeader) == 24);
static_assert(sizeof(HelloReply) == 32);
static_assert(sizeof(GetFields) == 32);
static_assert(sizeof(CallReply) == 16);
static_assert(sizeof(PutCall) == 32);
static_assert(sizeof(PutItemRecord) == 80);
static_assert(sizeof(PutItemReply) == 16);
static_assert(sizeof(ItemReply) == 32);

// A whole message: the header for `op` and `request_id`, then `body`. REQUIRES:
// body.size() <= kMaxBodyBytes.
std::string EncodeFrame(Op op, uint64_t request_id, absl::string_view body);
// Checks a received header: INVALID_ARGUMENT for a bad magic, version or op, or a body
// larger than kMaxBodyBytes (the connection cannot be read further).
absl::Status CheckFrameHeader(const FrameHeader& h);

// The most items one Get may name: their reply must fit kMaxBodyBytes.
inline constexpr uint32_t kMaxGetItems = (kMaxBodyBytes - sizeof(CallReply)) / sizeof(ItemReply);
// The most items one Put may name: their reply, each with a message, must fit kMaxBodyBytes
// (a reply answers OVER_BUDGET for runs that would not fit).
inline constexpr uint32_t kMaxPutItems =
    (kMaxBodyBytes - sizeof(CallReply)) / (sizeof(PutItemReply) + kMaxItemMessage);

// A Get body for `fields` (its count is set from `items`) and `items`.
std::string EncodeGet(GetFields fields, absl::Span<const ucx::GetItemRecord> items);
// Splits a Get body: INVALID_ARGUMENT when it is not GetFields and `count` records, or
// `count` exceeds kMaxGetItems.
// `*items` points into `body`.
absl::Status ParseGet(absl::string_view body, GetFields* fields, absl::string_view* items);

// A reply failing the whole Get, Put or Commit with `status` (not OK).
std::string EncodeCallError(const absl::Status& status);
// The start of a reply body answering `items` items, each to be appended after it.
std::string EncodeCallReply(uint32_t items);
// Appends one item to a Get reply body under construction (after EncodeCallReply).
void AppendItem(const ItemReply& item, absl::string_view runs, std::string* body);

// Reads a Get reply body of `expected` items, calling `item(index, reply, runs)` for each;
// `runs` points into `body`. A reply failing the whole call sets `*call_status` (else OK).
// INTERNAL only for a body that does not parse or answers another number of items.
absl::Status ParseGetReply(
    absl::string_view body, uint32_t expected,
    const std::function<void(uint32_t, const ItemReply&, absl::string_view)>& item,
    absl::Status* call_status);
// A Put body for `call` (its count is set from `items`) and `items`.
std::string EncodePut(PutCall call, absl::Span<const PutItemRecord> items);
// Splits a Put body: INVALID_ARGUMENT when it is not PutCall and `count` records, `count` is
// 0 or exceeds kMaxPutItems, or a reserved field is not 0. `*items` points into `body`.
absl::Status ParsePut(absl::string_view body, PutCall* call, absl::string_view* items);
// Appends one item to a Put or Commit reply body under construction: `item` with `status`'s
// code and message (cut to kMaxItemMessage) unless its code is set already, then `runs`.
void AppendPutItem(PutItemReply item, const absl::Status& status, absl::string_view runs,
                   std::string* body);
// Reads a Put or Commit reply body of `expected` items, calling `item(index, reply,
// message, runs)` for each (both point into `body`); as ParseGetReply otherwise.
absl::Status ParsePutReply(absl::string_view body, uint32_t expected,
                           const std::function<void(uint32_t, const PutItemReply&,
                                                    absl::string_view, absl::string_view)>& item,
                           absl::Status* call_status);

// True for the canonical status codes a reply may carry (1..16).
inline bool IsErrorCode(int32_t code) { return code > 0 && code <= 16; }

// The Hello reply body, with `status`'s code and message when it is not OK.
std::string EncodeHelloReply(const absl::Status& status, const HelloReply& ok_fields);
// Splits a Hello reply: the daemon's refusal as a status (its code and message), INTERNAL
// for a body that does not parse.
absl::Status ParseHelloReply(absl::string_view body, HelloReply* reply);

}  // namespace kvstash::wire::local
