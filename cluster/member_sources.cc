// Member sources without etcd: a static list, and the addresses a DNS name resolves to.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "cluster/member_source.h"
#include "common/host_port.h"

namespace kvstash::cluster {
namespace {

// How often Start tries again to resolve a name that does not resolve yet.
constexpr absl::Duration kStartRetry = absl::Milliseconds(200);

Member MemberAt(const HostPort& address) {
  Member m;
  m.id = address.ToString();
  m.grpc_address = m.id;
  m.ucx_address = m.id;
  return m;
}

// A fixed member set, delivered once by Start. Thread-safe.
class StaticMemberSource final : public MemberSource {
 public:
  explicit StaticMemberSource(std::vector<Member> members) : members_(std::move(members)) {}

  absl::Status Start(Listener listener, absl::Duration timeout) override {
    {
      absl::MutexLock lock(&mu_);
      if (started_) return absl::FailedPreconditionError("member source already started");
      started_ = true;
    }
    listener(members_);
    return absl::OkStatus();
  }

  std::vector<Member> Current() const override {
    absl::MutexLock lock(&mu_);
    return started_ ? members_ : std::vector<Member>();
  }

  MemberSourceStats stats() const override {
    absl::MutexLock lock(&mu_);
    MemberSourceStats stats;
    stats.updates = started_ ? 1 : 0;
    stats.connected = started_;
    return stats;
  }

 private:
  const std::vector<Member> members_;
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
};

// Resolves `host` to addresses of `family`: members "ip:port", sorted; an error when the
// name has none.
absl::StatusOr<std::vector<Member>> Resolve(const std::string& host, int port, DnsFamily family) {
  addrinfo hints{};
  hints.ai_family = family == DnsFamily::kIPv6 ? AF_INET6 : AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("DNS lookup of \"", host, "\" failed: ", gai_strerror(rc)));
  }
  std::vector<Member> members;
  for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    char ip[INET6_ADDRSTRLEN] = {};
    const void* addr = nullptr;
    if (ai->ai_family == AF_INET) {
      addr = &reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr;
    } else if (ai->ai_family == AF_INET6) {
      addr = &reinterpret_cast<const sockaddr_in6*>(ai->ai_addr)->sin6_addr;
    }
    if (addr == nullptr || inet_ntop(ai->ai_family, addr, ip, sizeof(ip)) == nullptr) continue;
    members.push_back(MemberAt(HostPort{ip, port}));
  }
  freeaddrinfo(result);
  if (members.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "\"", host, "\" has no ", family == DnsFamily::kIPv6 ? "IPv6" : "IPv4", " address"));
  }
  return SortedById(std::move(members));
}

// What a DNS source shares with its lookup thread. The thread is detached and holds the
// state past the source, so neither Start nor the destructor waits for a lookup that hangs
// in the resolver. Thread-safe.
struct DnsState {
  DnsState(std::string host, int port, absl::Duration refresh, DnsFamily family)
      : host(std::move(host)), port(port), refresh(refresh), family(family) {}

  const std::string host;
  const int port;
  const absl::Duration refresh;
  const DnsFamily family;

  // Held while the listener runs: the source takes it to wait for a delivery in progress.
  absl::Mutex deliver_mu;
  MemberSource::Listener listener ABSL_GUARDED_BY(deliver_mu);

  absl::Mutex mu;
  absl::CondVar cv;
  // Which thread may deliver: a thread whose generation is not the current one, or that
  // sees `stopping`, ends after its lookup.
  uint64_t generation ABSL_GUARDED_BY(mu) = 0;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool delivered ABSL_GUARDED_BY(mu) = false;  // the current thread delivered a set
  absl::Status last ABSL_GUARDED_BY(mu);       // of the last lookup
  std::vector<Member> current ABSL_GUARDED_BY(mu);
  MemberSourceStats stats ABSL_GUARDED_BY(mu);
};

// One lookup: counts it, and delivers the set when it changed and `generation` may.
// False when that thread should end.
bool LookUpOnce(DnsState& s, uint64_t generation) {
  absl::StatusOr<std::vector<Member>> members = Resolve(s.host, s.port, s.family);
  absl::MutexLock deliver(&s.deliver_mu);
  bool changed = false;
  {
    absl::MutexLock lock(&s.mu);
    ++s.stats.lookups;
    s.stats.connected = members.ok();
    s.last = members.status();
    if (!members.ok()) {
      ++s.stats.errors;
      s.stats.last_error = std::string(members.status().message());
    }
    if (s.stopping || s.generation != generation) return false;
    if (members.ok() && (s.stats.updates == 0 || *members != s.current)) {
      s.current = *members;
      ++s.stats.updates;
      changed = true;
    }
  }
  if (changed) s.listener(*members);
  absl::MutexLock lock(&s.mu);
  if (members.ok()) s.delivered = true;
  s.cv.SignalAll();
  return true;
}

// The lookup thread: every kStartRetry until the first set, then every `refresh`.
void RunLookups(std::shared_ptr<DnsState> s, uint64_t generation) {
  while (LookUpOnce(*s, generation)) {
    absl::MutexLock lock(&s->mu);
    const absl::Time until = absl::Now() + (s->delivered ? s->refresh : kStartRetry);
    while (!s->stopping && s->generation == generation && !s->cv.WaitWithDeadline(&s->mu, until)) {
    }
    if (s->stopping || s->generation != generation) return;
  }
}

// Re-resolves a name every `refresh` on a detached thread; a failed lookup keeps the last
// set. Thread-safe.
class DnsMemberSource final : public MemberSource {
 public:
  DnsMemberSource(std::string host, int port, absl::Duration refresh, DnsFamily family)
      : state_(std::make_shared<DnsState>(std::move(host), port, refresh, family)) {}

  ~DnsMemberSource() override {
    {
      absl::MutexLock lock(&state_->mu);
      state_->stopping = true;
      state_->cv.SignalAll();
    }
    absl::MutexLock deliver(&state_->deliver_mu);  // no listener call runs past this point
  }

  absl::Status Start(Listener listener, absl::Duration timeout) override;

  std::vector<Member> Current() const override {
    absl::MutexLock lock(&state_->mu);
    return state_->current;
  }

  MemberSourceStats stats() const override {
    absl::MutexLock lock(&state_->mu);
    return state_->stats;
  }

 private:
  const std::shared_ptr<DnsState> state_;
  absl::Mutex start_mu_;
  bool started_ ABSL_GUARDED_BY(start_mu_) = false;
};

absl::Status DnsMemberSource::Start(Listener listener, absl::Duration timeout) {
  absl::MutexLock start(&start_mu_);
  if (started_) return absl::FailedPreconditionError("member source already started");
  const absl::Time deadline = absl::Now() + timeout;
  uint64_t generation;
  {
    absl::MutexLock deliver(&state_->deliver_mu);
    state_->listener = std::move(listener);
    absl::MutexLock lock(&state_->mu);
    generation = ++state_->generation;
    state_->delivered = false;
  }
  std::thread(RunLookups, state_, generation).detach();
  {
    absl::MutexLock lock(&state_->mu);
    while (!state_->delivered && !state_->cv.WaitWithDeadline(&state_->mu, deadline)) {
    }
  }
  // Taken first so a delivery in progress either finishes (and counts) or never starts.
  absl::MutexLock deliver(&state_->deliver_mu);
  absl::MutexLock lock(&state_->mu);
  if (state_->delivered) {
    started_ = true;
    return absl::OkStatus();
  }
  ++state_->generation;  // the thread ends after its lookup
  state_->cv.SignalAll();
  if (!state_->last.ok() && state_->stats.lookups > 0) return state_->last;
  return absl::UnavailableError(absl::StrCat("DNS lookup of \"", state_->host,
                                             "\" gave no address within ",
                                             absl::FormatDuration(timeout)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<MemberSource>> NewStaticMemberSource(
    const std::vector<std::string>& addresses) {
  if (addresses.empty()) return absl::InvalidArgumentError("static member list is empty");
  std::vector<Member> members;
  for (const std::string& address : addresses) {
    absl::StatusOr<HostPort> parsed = ParseHostPort(address);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("static member list: ", parsed.status().message()));
    }
    members.push_back(MemberAt(*parsed));
  }
  return std::unique_ptr<MemberSource>(new StaticMemberSource(SortedById(std::move(members))));
}

absl::StatusOr<std::unique_ptr<MemberSource>> NewDnsMemberSource(std::string host, int port,
                                                                 absl::Duration refresh,
                                                                 DnsFamily family) {
  if (absl::Status s = ParseHostPort(absl::StrCat(host, ":", port)).status(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("DNS member source: ", s.message()));
  }
  if (refresh <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DNS member source: refresh ", absl::FormatDuration(refresh), " must be > 0"));
  }
  return std::unique_ptr<MemberSource>(new DnsMemberSource(std::move(host), port, refresh, family));
}

}  // namespace kvstash::cluster
