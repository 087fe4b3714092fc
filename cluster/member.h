// Member: one kvstashd of a cluster as it registers itself in etcd (docs/cluster.md), and
// the etcd key layout of a cluster: every member under "<prefix>/members/<id>", its value
// the member as JSON.
//
// Thread-safety: plain values and pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash::cluster {

// A tier's byte budget: its name as the daemon's metrics use it ("dram", "nvme").
struct TierCapacity {
  std::string tier;
  uint64_t capacity_bytes = 0;
  bool operator==(const TierCapacity& o) const {
    return tier == o.tier && capacity_bytes == o.capacity_bytes;
  }
};

struct Member {
  // Stable across restarts (config cluster.member_id), so a restarted daemon gets its share
  // of the keys, and the chunks on its NVMe, back. Rendezvous hashing scores this id.
  std::string id;
  // host:port where clients reach its gRPC port; empty when unknown.
  std::string grpc_address;
  // host:port of its UCX port; empty when UCX is off.
  std::string ucx_address;
  // Free-form failure domain (config cluster.zone); empty: none.
  std::string zone;
  // Each tier it runs, fastest first.
  std::vector<TierCapacity> tiers;
  // When this incarnation of the daemon started (Unix ms): tells a restart from a re-register.
  int64_t started_unix_ms = 0;

  bool operator==(const Member& o) const;
  bool operator!=(const Member& o) const { return !(*this == o); }
};

// INVALID_ARGUMENT unless `id` is 1..128 characters of [A-Za-z0-9._-].
absl::Status ValidateMemberId(absl::string_view id);
// INVALID_ARGUMENT naming the field unless the member can be registered and read back: a
// valid id, addresses empty or HOST:PORT, a zone of valid UTF-8 (JSON readers reject
// anything else, so clients would drop the member).
absl::Status ValidateMember(const Member& member);
// INVALID_ARGUMENT unless `prefix` starts with '/', does not end with '/', and has no
// whitespace or control characters ("/kvstash/default").
absl::Status ValidateClusterPrefix(absl::string_view prefix);

// INVALID_ARGUMENT unless `name` is 1..64 characters of [A-Za-z0-9._-].
absl::Status ValidateClusterName(absl::string_view name);
// The etcd prefix of cluster `name` (config cluster.name, the path of an etcd:// URI):
// "/kvstash/<name>".
std::string ClusterPrefix(absl::string_view name);

// "<prefix>/members/"
std::string MembersPrefix(absl::string_view prefix);
// "<prefix>/members/<id>"
std::string MemberKey(absl::string_view prefix, absl::string_view id);

// One JSON object; field names as docs/cluster.md lists them.
std::string MemberToJson(const Member& member);
// INVALID_ARGUMENT for malformed JSON, a missing or invalid id; unknown fields are ignored
// (a newer daemon may add some).
absl::StatusOr<Member> MemberFromJson(absl::string_view json);

// Members sorted by id, duplicates (same id) removed keeping the last.
std::vector<Member> SortedById(std::vector<Member> members);

}  // namespace kvstash::cluster
