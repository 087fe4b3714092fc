// ClusterMember: the daemon's side of a cluster (docs/cluster.md). It registers the daemon
// in etcd (cluster::Registrar), follows the member set (cluster::NewEtcdMemberSource) for
// metrics and logs, and probes the other members' Health (PeerProber). etcd being down
// never stops the daemon from serving: registration and the member set are retried in the
// background.
//
//   auto member = ClusterMember::Start(config.cluster, self, &log);  // after ports are bound
//   ... member->Collect(&families);                                  // /metrics
//   member->Stop();                           // on shutdown, before draining: withdraws
//
// Thread-safety: thread-safe. One background thread watches the registration, starts
// following the members (again, while etcd is unreachable) and runs the probes; member
// sets arrive on the member source's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "cluster/member.h"
#include "cluster/member_source.h"
#include "cluster/registrar.h"
#include "server/config.h"
#include "server/grpc/peer_prober.h"
#include "server/log.h"
#include "server/metrics/exposition.h"
#include "server/metrics/metric.h"

namespace kvstash::server {

// What the daemon bound, for the member it registers.
struct BoundListeners {
  // server.grpc_listen and the port it got (the chosen one for port 0).
  std::string grpc_listen;
  int grpc_port = 0;
  // "HOST:PORT" of the UCX listener; empty when UCX is off.
  std::string ucx_address;
};

// The member this daemon registers: id, addresses (cluster.member_id, advertise_*, else
// derived from `bound` and `hostname`), zone, capacities and `started`.
// INVALID_ARGUMENT naming the field when the gRPC listener is a Unix socket and
// cluster.advertise_grpc is empty, or the derived id is not a valid member id.
absl::StatusOr<cluster::Member> SelfMember(const ServerConfig& config, const BoundListeners& bound,
                                           absl::string_view hostname, absl::Time started);
// `host_port` with a wildcard host ("", 0.0.0.0, ::, [::], *) replaced by `hostname`.
std::string AdvertisedAddress(absl::string_view host_port, absl::string_view hostname);
// This host's name (gethostname), "localhost" when it has none.
std::string HostName();

// What the kvstash_cluster_* families (but the per-peer ones) report.
struct ClusterCounts {
  bool registered = false;
  uint64_t registrations = 0;
  uint64_t etcd_errors = 0;
  uint64_t members = 0;
  uint64_t member_changes = 0;
};
void AppendClusterFamilies(const ClusterCounts& counts, std::vector<metrics::Family>* out);

class ClusterMember;
// Appends every kvstash_cluster_* family; with `member` null (cluster.enabled false) they
// read 0 and have no per-peer series, so dashboards and alerts find them on every daemon.
void CollectClusterMetrics(const ClusterMember* member, std::vector<metrics::Family>* out);

class ClusterMember {
 public:
  // Starts registering `self` and following the members; `tls` is the daemon's gRPC TLS
  // (how its peers are probed). INVALID_ARGUMENT for a bad configuration or TLS file; etcd
  // being unreachable is not an error.
  static absl::StatusOr<std::unique_ptr<ClusterMember>> Start(const ClusterConfig& config,
                                                              cluster::Member self,
                                                              const TlsConfig& tls, Logger* log);
  ~ClusterMember();

  // Withdraws the registration (key deleted, lease revoked, bounded by the etcd call
  // timeout), then stops following and probing. Idempotent.
  void Stop();
  // Appends the kvstash_cluster_* families (docs/cluster.md, "Metrics").
  void Collect(std::vector<metrics::Family>* out) const ABSL_LOCKS_EXCLUDED(mu_);

  const cluster::Member& self() const { return self_; }

 private:
  ClusterMember(const ClusterConfig& config, cluster::Member self, cluster::EtcdOptions etcd,
                std::shared_ptr<grpc::ChannelCredentials> probe_credentials, Logger* log);
  void Run();
  // Logs registrations and lost leases, seen as changes of the registrar's stats.
  void WatchRegistration();
  // Starts following the member set; false while etcd is unreachable.
  bool FollowMembers();
  // The member source's listener: counts and logs the change.
  void OnMembers(const std::vector<cluster::Member>& members) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<cluster::Member> Members() const ABSL_LOCKS_EXCLUDED(mu_);

  const ClusterConfig config_;
  // How the member set is read: config_'s etcd settings, parsed once by Start.
  const cluster::EtcdOptions etcd_;
  const cluster::Member self_;
  Logger* const log_;
  std::unique_ptr<cluster::Registrar> registrar_;
  // Owned by the background thread until Stop joins it; readers use source_view_.
  std::unique_ptr<cluster::MemberSource> source_;
  std::atomic<cluster::MemberSource*> source_view_{nullptr};
  PeerProber prober_;
  absl::Notification stop_;
  std::thread thread_;
  bool stopped_ = false;  // Stop() ran; only the controlling thread touches it
  // Last registrar stats seen by WatchRegistration (background thread only).
  cluster::RegistrarStats last_registration_;
  int64_t follow_failures_ = 0;  // failed FollowMembers so far (background thread only)
  metrics::Counter member_changes_;
  mutable absl::Mutex mu_;
  std::vector<cluster::Member> members_ ABSL_GUARDED_BY(mu_);
  bool have_members_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kvstash::server
