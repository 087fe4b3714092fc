// LeaseTable: the cluster client's lookup leases. A cluster Lookup with lease_ms > 0 takes
// a lease on every member it found chunks on; the table keeps those member leases, and
// where each hit was found, under one cluster lease id, which Get then uses to fetch each
// chunk from the member that holds it under the member's own lease.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/cluster_member.h"
#include "kvstash/keys.h"

namespace kvstash::client_internal {

class LeaseTable {
 public:
  struct Entry {
    // Where each leased chunk was found.
    absl::flat_hash_map<Key128, MemberConnPtr> where;
    // The lease id each member returned.
    absl::flat_hash_map<const MemberConn*, uint64_t> member_leases;
  };

  // Keeps `entry` until `expires`; returns its cluster lease id (never 0).
  uint64_t Add(Entry entry, absl::Time expires);
  // The entry of `id`, null when unknown or expired at `now`.
  std::shared_ptr<const Entry> Find(uint64_t id, absl::Time now);
  size_t size();

 private:
  struct Item {
    absl::Time expires;
    std::shared_ptr<const Entry> entry;
  };
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Item> items_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Expired entries are dropped when the table reaches this size (amortized O(1) per Add).
  size_t purge_at_ ABSL_GUARDED_BY(mu_) = 64;
};

}  // namespace kvstash::client_internal
