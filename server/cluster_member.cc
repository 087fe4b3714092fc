#include "server/cluster_member.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/etcd_client.h"
#include "common/host_port.h"

namespace kvstash::server {
namespace {

// How often the background thread looks at the registration and the member source.
constexpr absl::Duration kTick = absl::Milliseconds(250);
// How long one attempt to read the member set may take while etcd is unreachable, and
// how long the thread waits before the next one.
constexpr absl::Duration kFollowTimeout = absl::Seconds(2);
constexpr absl::Duration kFollowRetry = absl::Seconds(2);
// Longest wait for one Health probe, however long the interval between probes.
constexpr absl::Duration kMaxProbeTimeout = absl::Seconds(2);

std::set<std::string> IdsOf(const std::vector<cluster::Member>& members) {
  std::set<std::string> ids;
  for (const cluster::Member& m : members) ids.insert(m.id);
  return ids;
}

}  // namespace

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string AdvertisedAddress(absl::string_view host_port, absl::string_view hostname) {
  absl::string_view host, port;
  int p = 0;
  if (!SplitHostPort(host_port, &host, &port) || !IsWildcardHost(host) ||
      !absl::SimpleAtoi(port, &p)) {
    return std::string(host_port);
  }
  return JoinHostPort(hostname, p);
}

absl::StatusOr<cluster::Member> SelfMember(const ServerConfig& config, const BoundListeners& bound,
                                           absl::string_view hostname, absl::Time started) {
  const ClusterConfig& c = config.cluster;
  cluster::Member m;
  m.id = c.member_id.empty() ? absl::StrCat(hostname, "-", bound.grpc_port) : c.member_id;
  if (absl::Status s = cluster::ValidateMemberId(m.id); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cluster.member_id: the default \"", m.id,
                                                   "\" is not usable (", s.message(),
                                                   "); set cluster.member_id"));
  }
  if (!c.advertise_grpc.empty()) {
    m.grpc_address = c.advertise_grpc;
  } else if (absl::StartsWith(bound.grpc_listen, "unix:")) {
    return absl::InvalidArgumentError(
        "cluster.advertise_grpc: must be set when server.grpc_listen is a Unix socket "
        "(other hosts cannot reach it)");
  } else {
    absl::string_view host, port;
    SplitHostPort(bound.grpc_listen, &host, &port);
    m.grpc_address = AdvertisedAddress(JoinHostPort(host, bound.grpc_port), hostname);
  }
  if (!bound.ucx_address.empty()) {
    m.ucx_address =
        c.advertise_ucx.empty() ? AdvertisedAddress(bound.ucx_address, hostname) : c.advertise_ucx;
  }
  m.zone = c.zone;
  m.tiers.push_back({"dram", config.storage.dram.capacity_bytes});
  if (config.storage.nvme.enabled) m.tiers.push_back({"nvme", config.storage.nvme.capacity_bytes});
  m.started_unix_ms = absl::ToUnixMillis(started);
  return m;
}

absl::StatusOr<std::unique_ptr<ClusterMember>> ClusterMember::Start(const ClusterConfig& config,
                                                                    cluster::Member self,
                                                                    const TlsConfig& tls,
                                                                    Logger* log) {
  absl::StatusOr<cluster::EtcdOptions> etcd = config.Etcd();
  if (!etcd.ok()) return etcd.status();
  cluster::RegistrarOptions options;
  options.etcd = *etcd;
  options.prefix = cluster::ClusterPrefix(config.name);
  options.self = self;
  options.lease_ttl_s = config.lease_ttl_s;
  // Built only when probes run, so an unused probe CA neither fails the start nor is polled.
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> probe =
      std::shared_ptr<grpc::ChannelCredentials>();
  if (config.peer_probe_interval_ms > 0) probe = MakePeerCredentials(tls, config.peer_ca_file);
  if (!probe.ok()) return probe.status();
  std::unique_ptr<ClusterMember> member(
      new ClusterMember(config, std::move(self), *std::move(etcd), *std::move(probe), log));
  log->Info("cluster: registering", {{"cluster", config.name},
                                     {"member", member->self_.id},
                                     {"grpc", member->self_.grpc_address},
                                     {"ucx", member->self_.ucx_address},
                                     {"zone", member->self_.zone},
                                     {"etcd", config.etcd_endpoints},
                                     {"lease_ttl_s", config.lease_ttl_s}});
  absl::StatusOr<std::unique_ptr<cluster::Registrar>> registrar =
      cluster::Registrar::Create(options);
  if (!registrar.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cluster: ", registrar.status().message()));
  }
  member->registrar_ = *std::move(registrar);
  member->thread_ = std::thread([m = member.get()] { m->Run(); });
  return member;
}

ClusterMember::ClusterMember(const ClusterConfig& config, cluster::Member self,
                             cluster::EtcdOptions etcd,
                             std::shared_ptr<grpc::ChannelCredentials> probe_credentials,
                             Logger* log)
    : config_(config),
      etcd_(std::move(etcd)),
      self_(std::move(self)),
      log_(log),
      prober_(PeerProberOptions{
          self_.id, std::min(kMaxProbeTimeout, absl::Milliseconds(config.peer_probe_interval_ms)),
          std::move(probe_credentials)}) {}

ClusterMember::~ClusterMember() { Stop(); }

void ClusterMember::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (registrar_ != nullptr) {
    registrar_->Stop();
    log_->Info("cluster: withdrawn", {{"member", self_.id}});
  }
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
  source_view_.store(nullptr);
  source_.reset();
}

void ClusterMember::Run() {
  const absl::Duration probe_every = absl::Milliseconds(config_.peer_probe_interval_ms);
  absl::Time next_follow = absl::InfinitePast();
  absl::Time next_probe = absl::Now();
  while (!stop_.WaitForNotificationWithTimeout(kTick)) {
    WatchRegistration();
    const absl::Time now = absl::Now();
    if (source_ == nullptr && now >= next_follow && !FollowMembers()) {
      next_follow = absl::Now() + kFollowRetry;
    }
    if (probe_every > absl::ZeroDuration() && now >= next_probe) {
      for (const PeerProber::Change& c : prober_.ProbeAll(Members())) {
        if (c.up) {
          log_->Info("cluster: peer answers its Health probe", {{"member", c.id}});
        } else {
          log_->Warn("cluster: peer probe failed", {{"member", c.id}, {"error", c.why}});
        }
      }
      next_probe = now + probe_every;
    }
  }
}

void ClusterMember::WatchRegistration() {
  const cluster::RegistrarStats now = registrar_->stats();
  const cluster::RegistrarStats before = last_registration_;
  last_registration_ = now;
  if (now.registered && (!before.registered || now.registrations != before.registrations)) {
    log_->Info(
        "cluster: registered",
        {{"member", self_.id}, {"cluster", config_.name}, {"registrations", now.registrations}});
  } else if (!now.registered && before.registered) {
    log_->Warn("cluster: registration lost (lease expired or etcd unreachable); retrying",
               {{"member", self_.id}, {"etcd_errors", now.etcd_errors}});
  }
}

bool ClusterMember::FollowMembers() {
  absl::StatusOr<std::unique_ptr<cluster::MemberSource>> source =
      cluster::NewEtcdMemberSource(etcd_, cluster::ClusterPrefix(config_.name));
  absl::Status s = source.status();
  if (s.ok()) {
    s = (*source)->Start([this](const std::vector<cluster::Member>& m) { OnMembers(m); },
                         kFollowTimeout);
  }
  if (!s.ok()) {
    // Once per outage: the retries every few seconds would flood the log.
    if (follow_failures_++ == 0) {
      log_->Warn("cluster: cannot read the member set; retrying in the background",
                 {{"status", s}});
    }
    return false;
  }
  log_->Info("cluster: following the member set", {{"failed_attempts", follow_failures_}});
  source_ = *std::move(source);
  source_view_.store(source_.get());
  return true;
}

void ClusterMember::OnMembers(const std::vector<cluster::Member>& members) {
  std::set<std::string> before;
  {
    absl::MutexLock lock(&mu_);
    before = IdsOf(members_);
    const bool changed = !have_members_ || members_ != members;
    members_ = members;
    have_members_ = true;
    if (changed) member_changes_.Add();
  }
  const std::set<std::string> after = IdsOf(members);
  for (const std::string& id : after) {
    if (before.count(id) == 0) log_->Info("cluster: member joined", {{"member", id}});
  }
  for (const std::string& id : before) {
    if (after.count(id) == 0) log_->Info("cluster: member left", {{"member", id}});
  }
  log_->Info("cluster: member set",
             {{"members", members.size()}, {"ids", absl::StrJoin(after, ",")}});
}

std::vector<cluster::Member> ClusterMember::Members() const {
  absl::MutexLock lock(&mu_);
  return members_;
}

void ClusterMember::Collect(std::vector<metrics::Family>* out) const {
  const cluster::RegistrarStats reg = registrar_->stats();
  const cluster::MemberSource* source = source_view_.load();
  ClusterCounts counts;
  counts.registered = reg.registered;
  counts.registrations = reg.registrations;
  counts.etcd_errors = reg.etcd_errors + (source == nullptr ? 0 : source->stats().errors);
  counts.members = Members().size();
  counts.member_changes = member_changes_.Value();
  AppendClusterFamilies(counts, out);
  prober_.Collect(out);
}

void AppendClusterFamilies(const ClusterCounts& c, std::vector<metrics::Family>* out) {
  using metrics::MetricType;
  auto one = [out](const char* name, const char* help, MetricType type, double value) {
    out->push_back({name, help, type, {{{}, value, {}}}});
  };
  one("kvstash_cluster_registered",
      "1 while this daemon's registration is in etcd under a live lease, else 0.",
      MetricType::kGauge, c.registered ? 1.0 : 0.0);
  one("kvstash_cluster_registrations_total",
      "Leases granted and member key put (more than 1: the lease was lost).", MetricType::kCounter,
      static_cast<double>(c.registrations));
  one("kvstash_cluster_etcd_errors_total",
      "Failed etcd calls (registration and following the member set).", MetricType::kCounter,
      static_cast<double>(c.etcd_errors));
  one("kvstash_cluster_members", "Members in the cluster's member set as last read from etcd.",
      MetricType::kGauge, static_cast<double>(c.members));
  one("kvstash_cluster_member_changes_total",
      "Member sets that differed from the previous one (placement changes).", MetricType::kCounter,
      static_cast<double>(c.member_changes));
}

void CollectClusterMetrics(const ClusterMember* member, std::vector<metrics::Family>* out) {
  if (member != nullptr) return member->Collect(out);
  AppendClusterFamilies(ClusterCounts{}, out);
  PeerProber(PeerProberOptions{}).Collect(out);
}

}  // namespace kvstash::server
