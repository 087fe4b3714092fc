#include "server/grpc/peer_prober.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "common/tls_channel.h"
#include "kvstash/v1/kvstash.grpc.pb.h"

namespace kvstash::server {

struct PeerProber::Peer {
  std::string address;
  std::unique_ptr<v1::KvStash::Stub> stub;
  bool up = false;
  bool probed = false;  // up says what the last probe found
};

namespace {

// One probe in flight: the call's context and messages live until its callback ran.
struct Probe {
  grpc::ClientContext context;
  v1::HealthRequest request;
  v1::HealthResponse response;
  grpc::Status status;
};

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakePeerCredentials(
    const TlsConfig& tls, const std::string& peer_ca_file) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  TlsChannelFiles files;
  if (!peer_ca_file.empty()) {
    files.ca = {peer_ca_file, "cluster.peer_ca_file"};
  } else if (!tls.client_ca_file.empty()) {
    files.ca = {tls.client_ca_file, "server.tls.client_ca_file"};
  }
  if (!tls.client_ca_file.empty()) {
    files.cert = {tls.cert_file, "server.tls.cert_file"};
    files.key = {tls.key_file, "server.tls.key_file"};
  }
  files.reload_interval = absl::Milliseconds(tls.reload_interval_ms);
  return MakeTlsChannelCredentials(files);
}

PeerProber::PeerProber(PeerProberOptions options)
    : options_(std::move(options)),
      credentials_(options_.credentials != nullptr ? options_.credentials
                                                   : grpc::InsecureChannelCredentials()) {}

PeerProber::~PeerProber() = default;

PeerProber::Peer* PeerProber::PeerOf(const cluster::Member& member) {
  std::unique_ptr<Peer>& peer = peers_[member.id];
  if (peer == nullptr || peer->address != member.grpc_address) {
    peer = std::make_unique<Peer>();
    peer->address = member.grpc_address;
    peer->stub = v1::KvStash::NewStub(grpc::CreateChannel(member.grpc_address, credentials_));
  }
  return peer.get();
}

std::vector<PeerProber::Change> PeerProber::ProbeAll(const std::vector<cluster::Member>& members) {
  struct Pending {
    std::string id;
    Peer* peer;
    std::unique_ptr<Probe> probe;
  };
  std::vector<Pending> probes;
  {
    absl::MutexLock lock(&mu_);
    std::set<std::string> listed;
    for (const cluster::Member& m : members) {
      if (m.id == options_.self_id || m.grpc_address.empty()) continue;
      listed.insert(m.id);
      probes.push_back({m.id, PeerOf(m), std::make_unique<Probe>()});
    }
    for (auto it = peers_.begin(); it != peers_.end();) {
      it = listed.count(it->first) > 0 ? std::next(it) : peers_.erase(it);
    }
  }
  // Peers are only erased here, on this thread, so the pointers stay valid unlocked.
  absl::BlockingCounter pending(static_cast<int>(probes.size()));
  for (auto& [id, peer, probe] : probes) {
    probe->context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
    Probe* p = probe.get();
    peer->stub->async()->Health(&p->context, &p->request, &p->response,
                                [p, &pending](grpc::Status s) {
                                  p->status = std::move(s);
                                  pending.DecrementCount();
                                });
  }
  pending.Wait();
  std::vector<Change> changes;
  absl::MutexLock lock(&mu_);
  for (auto& [id, peer, probe] : probes) {
    const bool up = probe->status.ok() && probe->response.state() == v1::HealthResponse::SERVING;
    if (!probe->status.ok()) ++errors_[id];
    if (up != peer->up || (!up && !peer->probed)) {
      std::string why;
      if (!probe->status.ok()) {
        why = absl::StrCat(
            absl::StatusCodeToString(static_cast<absl::StatusCode>(probe->status.error_code())),
            ": ", probe->status.error_message());
      } else if (!up) {
        why = absl::StrCat("Health answered ",
                           v1::HealthResponse::State_Name(probe->response.state()));
      }
      changes.push_back({id, up, std::move(why)});
    }
    peer->up = up;
    peer->probed = true;
  }
  return changes;
}

void PeerProber::Collect(std::vector<metrics::Family>* out) const {
  using metrics::MetricType;
  metrics::Family up{"kvstash_cluster_peer_up",
                     "1 while the member answered its last Health probe as serving, else 0.",
                     MetricType::kGauge,
                     {}};
  metrics::Family errors{"kvstash_cluster_peer_probe_errors_total",
                         "Health probes of the member that failed or timed out.",
                         MetricType::kCounter,
                         {}};
  absl::MutexLock lock(&mu_);
  for (const auto& [id, peer] : peers_) {
    up.samples.push_back({{{"member", id}}, peer->up ? 1.0 : 0.0, {}});
  }
  for (const auto& [id, n] : errors_) {
    errors.samples.push_back({{{"member", id}}, static_cast<double>(n), {}});
  }
  out->push_back(std::move(up));
  out->push_back(std::move(errors));
}

}  // namespace kvstash::server
