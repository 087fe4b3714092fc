// PeerProber: probes the gRPC Health of the other members of the daemon's cluster, so
// /metrics shows which peers answer (kvstash_cluster_peer_up{member}) and how often calls
// to each failed (kvstash_cluster_peer_probe_errors_total{member}). A probe that times out,
// fails, or finds the peer draining counts as down.
//
// Thread-safety: thread-safe. ProbeAll is called from one thread at a time (the cluster
// member's background thread); Collect runs on the scraping thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/member.h"
#include "server/config.h"
#include "server/metrics/exposition.h"

namespace grpc {
class ChannelCredentials;
}  // namespace grpc

namespace kvstash::server {

struct PeerProberOptions {
  // This daemon's member id: never probed.
  std::string self_id;
  // How long one probe may take before the peer counts as down.
  absl::Duration timeout = absl::Seconds(1);
  // How probes connect (MakePeerCredentials); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

// The credentials of probes from the daemon's own gRPC TLS settings: plaintext when gRPC is
// plaintext (its peers are too); else TLS verified by `peer_ca_file`, else by
// server.tls.client_ca_file, else by the system's roots, presenting the daemon's own
// certificate when gRPC is mutual TLS (the peers then require one, so the certificate
// must allow client authentication as well). INVALID_ARGUMENT naming a bad file.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakePeerCredentials(
    const TlsConfig& tls, const std::string& peer_ca_file);

class PeerProber {
 public:
  explicit PeerProber(PeerProberOptions options);
  ~PeerProber();

  // A peer whose answer changed: up now, or down with why (the first probe of a peer that
  // is down counts as a change).
  struct Change {
    std::string id;
    bool up = false;
    std::string why;  // the failed call's status, or the state it reported; "" when up
  };

  // Probes every member but this daemon once, all in parallel, and returns when every
  // probe has answered or timed out, with the peers whose state changed. Members no longer
  // listed are forgotten (their error counts stay).
  std::vector<Change> ProbeAll(const std::vector<cluster::Member>& members)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Appends kvstash_cluster_peer_up and kvstash_cluster_peer_probe_errors_total.
  void Collect(std::vector<metrics::Family>* out) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Peer;

  // The peer of `member`, made (or remade when its address changed) as needed.
  Peer* PeerOf(const cluster::Member& member) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const PeerProberOptions options_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  mutable absl::Mutex mu_;
  // By member id: the members of the last ProbeAll.
  std::map<std::string, std::unique_ptr<Peer>> peers_ ABSL_GUARDED_BY(mu_);
  // Failed probes by member id, kept after a member leaves so the counter never goes back.
  std::map<std::string, uint64_t> errors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::server
