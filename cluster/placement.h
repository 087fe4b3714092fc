// Placement: which members own a chunk key, by rendezvous (highest random weight) hashing
// of the key with each member's id: every client with the same member set agrees, and a
// member joining or leaving moves only the keys it gains or loses (about 1/N of them).
//
// Thread-safety: immutable after construction; safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "cluster/member.h"
#include "kvstash/keys.h"

namespace kvstash::cluster {

using OwnerList = absl::InlinedVector<uint32_t, 4>;

class Placement {
 public:
  // `members` need not be sorted; they are sorted by id (SortedById).
  explicit Placement(std::vector<Member> members);

  const std::vector<Member>& members() const { return members_; }
  size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  // Index into members() of the member with `id`; -1 when absent.
  int IndexOf(absl::string_view id) const;

  // The min(n, size()) owners of `key`, best first, as indices into members().
  // REQUIRES: !empty().
  OwnerList Owners(const Key128& key, size_t n) const;
  // Owners(key, 1)[0].
  uint32_t Owner(const Key128& key) const;

  // The score of `key` on the member with hashed id `id_hash` (higher wins); exposed for
  // the placement benchmark and tests.
  static uint64_t Score(const Key128& key, uint64_t id_hash);
  static uint64_t HashId(absl::string_view id);

 private:
  std::vector<Member> members_;
  std::vector<uint64_t> id_hashes_;  // HashId of members_[i].id
};

}  // namespace kvstash::cluster
