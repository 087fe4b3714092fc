// In-process fake members for the cluster client's unit tests: FakeDaemon is one member's
// store (chunks, pins, leases handed out) with switches that make it refuse, corrupt or
// record; FakeCluster connects each member URI to its FakeDaemon through
// ClusterClient::Create's ConnectFn, and delivers member sets by hand.
//
// Thread-safety: thread-safe (every FakeDaemon field under its mutex).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "client/cluster_client.h"
#include "cluster/member_source.h"
#include "kvstash/client.h"

namespace kvstash::client_internal {

struct FakeDaemon {
  absl::Mutex mu;
  absl::flat_hash_map<Key128, std::string> chunks ABSL_GUARDED_BY(mu);
  absl::flat_hash_set<Key128> pinned ABSL_GUARDED_BY(mu);
  // Not OK: every call answers this.
  absl::Status refuse ABSL_GUARDED_BY(mu);
  // Pin(true) answers RESOURCE_EXHAUSTED (nothing pinned).
  bool pin_quota_full ABSL_GUARDED_BY(mu) = false;
  // Get answers DATA_LOSS for these keys.
  absl::flat_hash_set<Key128> data_loss ABSL_GUARDED_BY(mu);
  // Get reports a checksum that does not match the bytes for these keys.
  absl::flat_hash_set<Key128> bad_checksum ABSL_GUARDED_BY(mu);
  uint64_t next_lease ABSL_GUARDED_BY(mu) = 1;
  // (lease id handed out, the keys it covers) per Lookup with a lease.
  std::vector<std::pair<uint64_t, std::vector<Key128>>> leases ABSL_GUARDED_BY(mu);
  // (lease id passed, key) per item of every Get.
  std::vector<std::pair<uint64_t, Key128>> gets ABSL_GUARDED_BY(mu);
  uint64_t calls ABSL_GUARDED_BY(mu) = 0;
  // RegisterMemory answers INVALID_ARGUMENT.
  bool refuse_memory ABSL_GUARDED_BY(mu) = false;
};

// A member set the test changes by hand (Set), delivered on the test's thread.
class HandSource : public cluster::MemberSource {
 public:
  explicit HandSource(std::vector<cluster::Member> members) : members_(std::move(members)) {}
  absl::Status Start(Listener listener, absl::Duration) override {
    listener_ = std::move(listener);
    listener_(members_);
    return absl::OkStatus();
  }
  std::vector<cluster::Member> Current() const override { return members_; }
  cluster::MemberSourceStats stats() const override { return {1, 0, true}; }
  void Set(std::vector<cluster::Member> members) {
    members_ = cluster::SortedById(std::move(members));
    listener_(members_);
  }

 private:
  Listener listener_;
  std::vector<cluster::Member> members_;
};

class FakeCluster {
 public:
  // Members "m0" .. "m<n-1>", each a FakeDaemon at grpc address "fake<i>:1".
  explicit FakeCluster(int n);
  // A cluster client over these members. The source stays owned by the client; source()
  // reaches it until the client is destroyed.
  std::unique_ptr<ClusterClient> Connect(ClientOptions options);
  HandSource& source() { return *source_; }

  cluster::Member member(int i) const { return members_[i]; }
  std::vector<cluster::Member> members() const { return members_; }
  FakeDaemon& daemon(int i) { return *daemons_[i]; }
  // The daemon of member id `id`.
  FakeDaemon& daemon(const std::string& id);
  // The ids of the first `n` owners of `key` among `members`, best first.
  static std::vector<std::string> Owners(const std::vector<cluster::Member>& members,
                                         const Key128& key, size_t n);

 private:
  std::vector<cluster::Member> members_;
  std::vector<std::shared_ptr<FakeDaemon>> daemons_;
  HandSource* source_ = nullptr;
};

}  // namespace kvstash::client_internal
