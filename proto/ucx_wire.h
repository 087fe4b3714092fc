// The UCX data plane's message layout (docs/protocol.md, "UCX data plane"): fixed-size,
// little-endian headers carried as UCP active-message headers, and the helpers that
// encode and validate them. Client and server share this file so the two cannot drift.
//
// Every request is one active message with id kRequestAmId: a RequestHeader (plus, for
// Put, a PutFields block) as the AM header, and a body as the AM data (the chunk payload
// for Put, key/capacity records for Get, a serialized kvstash.v1 request message for the
// unary ops). Every answer is one or more active messages with id kReplyAmId: a
// ReplyHeader as the AM header and a body (payload bytes, an error message, or a
// serialized kvstash.v1 response message).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/calls.h"

namespace kvstash::wire::ucx {

inline constexpr uint16_t kRequestAmId = 1;
inline constexpr uint16_t kReplyAmId = 2;
inline constexpr uint32_t kMagic = 0x5553564B;  // "KVSU" read as little-endian bytes
inline constexpr uint8_t kVersion = 2;
// ReplyHeader.index of an answer that concerns the whole request, not one item.
inline constexpr uint32_t kWholeRequest = 0xFFFFFFFFu;

#define KVSTASH_CALL_UCX_OP(name, metric, ucx_op) k##name = ucx_op,
// The calls of proto/calls.h, and the transport's own messages (docs/protocol.md lists
// each op's body and reply).
enum class Op : uint8_t {
  KVSTASH_CALLS(KVSTASH_CALL_UCX_OP, KVSTASH_CALL_UCX_OP) kHello =
      9,          // on the sockaddr endpoint, body: empty or a HelloBody (the bearer token);
                  // reply body: HelloReply + the daemon worker's UCP address
  kAttach = 10,   // on the endpoint created from that address; body: the token (8 bytes LE)
                  // + the client worker's UCP address, for the daemon's reply endpoint
  kCommit = 11,   // header + CommitFields, no body: the client wrote a reserved chunk;
                  // answered like the Put it completes (reply op kPut)
  kRelease = 12,  // no body: the client has copied the chunks of Get `request_id` that came
                  // back kFlagDirect; no reply
};
#undef KVSTASH_CALL_UCX_OP
inline constexpr uint8_t kMaxOp = 16;

// RequestHeader.flags of Attach: the client's data endpoint handles peer failures (the
// daemon's reply endpoint must use the same error handling mode).
inline constexpr uint16_t kFlagPeerErrorHandling = 1;
// RequestHeader.flags. Attach: the client can map the daemon's arena (the reply body is
// an ArenaInfo and the packed remote key). Put: no payload follows; reserve the chunk and
// say where to write it. Get: chunks in the arena may be answered with where to read them.
inline constexpr uint16_t kFlagDirect = 2;
// RequestHeader.flags of Put: a PutHintsFields block follows PutFields in the AM header.
// Without it the header is as before hints existed, so older clients' Puts still parse.
inline constexpr uint16_t kFlagPutHints = 4;

// ReplyHeader.flags.
inline constexpr uint16_t kFlagAlreadyPresent = 1;  // Put: the key was already stored
inline constexpr uint16_t kFlagTooLarge = 2;        // Get: chunk exceeds the capacity sent
// Put: reserved; write the chunk at the ArenaRun records of the body, then Commit
// ReplyHeader.handle. Get: read the chunk from the ArenaRun records of the body (in chunk
// order), then Release the request.
// (kFlagDirect, 2, is also a ReplyHeader flag value; the two never meet on one message.)
inline constexpr uint16_t kFlagDirectRuns = 4;
// Put (kFlagDirect): no direct write for this chunk; send it again as a plain Put.
inline constexpr uint16_t kFlagSendPayload = 8;

#pragma pack(push, 1)
// First bytes of every request AM header. 32 bytes.
struct RequestHeader {
  uint32_t magic;
  uint8_t version;
  uint8_t op;                // Op
  uint16_t flags;            // 0, except kFlagPeerErrorHandling on Attach
  uint64_t request_id;       // chosen by the client, echoed in every reply
  uint8_t namespace_id[16];  // zero for Health / RegisterNamespace / Stats
};
// Follows RequestHeader in the AM header of a Put. 48 bytes.
struct PutFields {
  uint8_t key[16];
  uint64_t size_bytes;  // must equal the AM data length
  uint64_t checksum;    // XXH3-64 of the payload, 0 = the daemon computes it
  uint32_t tokens;
  uint32_t format;
  uint32_t index;  // position of this chunk in the client's Put call, echoed in the reply
  uint32_t count;  // chunks in the client's Put call
};
// PutHintsFields.hint_flags.
inline constexpr uint8_t kHintHasParent = 1;  // parent_key names the chunk before this one
inline constexpr uint8_t kHintPin = 2;        // pin the chunk
// Follows PutFields in the AM header of a Put with kFlagPutHints: the chunk's hints
// (kvstash/hints.h, docs/protocol.md "Hints"). 32 bytes.
struct PutHintsFields {
  uint8_t parent_key[16];  // valid with kHintHasParent
  uint64_t session_id;     // 0: none
  uint32_t ttl_ms;         // 0: none
  uint8_t priority;        // kvstash::Priority / v1.Priority value
  uint8_t hint_flags;      // kHint*
  uint16_t reserved;       // 0
};
// Follows RequestHeader in the AM header of a Get. 16 bytes.
struct GetFields {
  uint64_t lease_id;  // 0 = none
  uint32_t count;     // items (GetItemRecord) in the body
  uint32_t reserved;  // 0
};
// Follows RequestHeader in the AM header of a Commit. 16 bytes.
struct CommitFields {
  uint64_t handle;    // ReplyHeader.handle of the reservation
  uint32_t index;     // the chunk's position in the Put call, echoed in the reply
  uint32_t reserved;  // 0
};
// Body of the Attach reply to a kFlagDirect Attach, followed by the packed remote key
// (ucp_rkey_pack) of the arena; an empty body means no direct access. 16 bytes.
struct ArenaInfo {
  uint64_t address;  // the arena's address in the daemon (for RMA)
  uint64_t size;     // bytes
};
// Body of a Hello, followed by `token_length` bytes of bearer token (docs/security.md).
// An empty Hello body (clients from before authentication) presents no token. 4 bytes.
struct HelloBody {
  uint32_t token_length;
};
inline constexpr uint32_t kMaxTokenBytes = 4096;
// Body of the Hello reply, followed by the daemon worker's UCP address. 16 bytes.
struct HelloReply {
  uint64_t token;              // names this connection in Attach
  uint64_t tcp_segment_bytes;  // the daemon's UCX TCP segment (see ConfigureUcx); 0: unknown
};
// One contiguous piece of a chunk in the arena. 16 bytes.
struct ArenaRun {
  uint64_t offset;  // from the arena's start
  uint64_t length;
};
// One Get item in the request body. 24 bytes.
struct GetItemRecord {
  uint8_t key[16];
  uint64_t capacity;  // bytes the client can receive; larger chunks come back kFlagTooLarge
};
// The AM header of every reply. 64 bytes.
struct ReplyHeader {
  uint32_t magic;
  uint8_t version;
  uint8_t op;      // the request's op
  uint16_t flags;  // kFlag*
  uint64_t request_id;
  int32_t code;    // google.rpc.Code / absl::StatusCode; non-zero: body is the message
  uint32_t index;  // item index (Put: as sent in PutFields order, Get: record), or kWholeRequest
  uint64_t size_bytes;  // Get: the chunk's size
  uint64_t checksum;    // Get: XXH3-64 of the chunk
  uint32_t tokens;      // Get
  uint32_t format;      // Get
  uint64_t offset;      // Get: where the body's bytes go within the chunk
  uint64_t handle;      // Put with kFlagDirectRuns: the reservation to Commit; else 0
};
#pragma pack(pop)

static_assert(sizeof(RequestHeader) == 32);
static_assert(sizeof(PutFields) == 48);
static_assert(sizeof(PutHintsFields) == 32);
static_assert(sizeof(GetFields) == 16);
static_assert(sizeof(GetItemRecord) == 24);
static_assert(sizeof(CommitFields) == 16);
static_assert(sizeof(ArenaInfo) == 16);
static_assert(sizeof(HelloBody) == 4);
static_assert(sizeof(HelloReply) == 16);
static_assert(sizeof(ArenaRun) == 16);
static_assert(sizeof(ReplyHeader) == 64);

// A request header with magic and version filled in.
RequestHeader MakeRequestHeader(Op op, uint64_t request_id, const uint8_t* namespace_id);
// A reply to `request` with magic, version, op and request id filled in.
ReplyHeader MakeReplyHeader(uint8_t op, uint64_t request_id);

// Reads the request header of an AM header of `length` bytes. INVALID_ARGUMENT names the
// problem: too short, bad magic, unsupported version, unknown op, or a header length that
// does not fit the op. `*out` is filled whenever at least 32 bytes arrived, so the error
// can still be answered under the request's id.
absl::Status ParseRequestHeader(const void* header, size_t length, RequestHeader* out);
// Reads the reply header. INVALID_ARGUMENT for a short header, bad magic or version.
absl::Status ParseReplyHeader(const void* header, size_t length, ReplyHeader* out);

// A Hello body presenting `token` ("" for an empty token: no HelloBody at all).
std::string EncodeHello(absl::string_view token);
// The token a Hello body presents ("" for an empty body). INVALID_ARGUMENT when the length
// field disagrees with the body or exceeds kMaxTokenBytes. `*token` points into `body`.
absl::Status ParseHello(absl::string_view body, absl::string_view* token);

// The Hello reply body: `reply` then the worker address.
std::string EncodeHelloReply(const HelloReply& reply, absl::string_view worker_address);
// Splits a Hello reply body; INTERNAL when it is too short to hold a HelloReply and an
// address. `*worker_address` points into `body`.
absl::Status ParseHelloReply(absl::string_view body, HelloReply* reply,
                             absl::string_view* worker_address);

// Size of the AM header for `op` with RequestHeader.flags `flags`: RequestHeader plus its
// op-specific blocks (a Put with kFlagPutHints carries PutHintsFields after PutFields).
size_t RequestHeaderLength(Op op, uint16_t flags = 0);

// Copies a struct that sits `offset` bytes after RequestHeader in an AM header (by default
// right after it).
template <typename T>
T ReadFields(const void* header, size_t offset = 0) {
  T out;
  std::memcpy(&out, static_cast<const uint8_t*>(header) + sizeof(RequestHeader) + offset,
              sizeof(T));
  return out;
}

// The hints block of a Put whose RequestHeader.flags are `flags`, in an AM header that
// ParseRequestHeader accepted: zeroes without kFlagPutHints (as older clients send);
// INVALID_ARGUMENT for unknown hint_flags or non-zero reserved bytes.
absl::Status ReadPutHints(const void* header, uint16_t flags, PutHintsFields* out);
// INVALID_ARGUMENT for unknown hint_flags or non-zero reserved bytes.
absl::Status CheckPutHints(const PutHintsFields& hints);
// The body of a Get with `fields`: INVALID_ARGUMENT when it names no keys or its length is
// not `fields.count` GetItemRecords.
absl::Status CheckGetBody(const GetFields& fields, size_t length);
// Splits an Attach body into the Hello token and the client worker's UCP address (which
// points into `body`). INVALID_ARGUMENT when no address follows the token.
absl::Status ParseAttachBody(absl::string_view body, uint64_t* token,
                             absl::string_view* worker_address);

}  // namespace kvstash::wire::ucx
