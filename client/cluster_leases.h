// LeaseTable: the cluster client's lookup leases. A cluster Lookup with lease_ms > 0 takes
// a lease on every member it found chunks on (one per member call, so a member asked in
// two rounds holds two); the table keeps, under one cluster lease id, where each hit was
// found and the member lease that covers it, which Get then uses to fetch each chunk from
// that member under that lease. Member leases that cover no hit are left to expire.
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
    // Where a leased chunk was found, and the lease id that member returned for it.
    struct Held {
      MemberConnPtr conn;
      uint64_t lease_id = 0;
    };
    absl::flat_hash_map<Key128, Held> where;
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
