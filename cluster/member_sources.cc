// Member sources without etcd: a static list, and the addresses a DNS name resolves to.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "cluster/host_port.h"
#include "cluster/member_source.h"

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

// Re-resolves a name every `refresh` on its own thread; a failed lookup keeps the last set.
// Thread-safe.
class DnsMemberSource final : public MemberSource {
 public:
  DnsMemberSource(std::string host, int port, absl::Duration refresh, DnsFamily family)
      : host_(std::move(host)), port_(port), refresh_(refresh), family_(family) {}

  ~DnsMemberSource() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      cv_.SignalAll();
    }
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Start(Listener listener, absl::Duration timeout) override {
    {
      absl::MutexLock lock(&mu_);
      if (started_) return absl::FailedPreconditionError("member source already started");
      started_ = true;
    }
    listener_ = std::move(listener);
    const absl::Time deadline = absl::Now() + timeout;
    absl::Status status = Refresh();
    while (!status.ok() && absl::Now() + kStartRetry < deadline) {
      absl::SleepFor(kStartRetry);  // the destructor cannot run during Start
      status = Refresh();
    }
    if (!status.ok()) {
      absl::MutexLock lock(&mu_);
      started_ = false;
      return status;
    }
    thread_ = std::thread([this] { Run(); });
    return absl::OkStatus();
  }

  std::vector<Member> Current() const override {
    absl::MutexLock lock(&mu_);
    return current_;
  }

  MemberSourceStats stats() const override {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  // One lookup; delivers the set when it changed.
  absl::Status Refresh() {
    absl::StatusOr<std::vector<Member>> members = Resolve(host_, port_, family_);
    {
      absl::MutexLock lock(&mu_);
      ++stats_.lookups;
      stats_.connected = members.ok();
      if (!members.ok()) {
        ++stats_.errors;
        stats_.last_error = std::string(members.status().message());
        return members.status();
      }
      if (stats_.updates > 0 && *members == current_) return absl::OkStatus();
      current_ = *members;
      ++stats_.updates;
    }
    listener_(*members);
    return absl::OkStatus();
  }

  void Run() {
    while (true) {
      {
        const absl::Time until = absl::Now() + refresh_;
        absl::MutexLock lock(&mu_);
        while (!stopping_ && !cv_.WaitWithDeadline(&mu_, until)) {
        }
        if (stopping_) return;
      }
      Refresh().IgnoreError();  // counted in stats; the last set stays
    }
  }

  const std::string host_;
  const int port_;
  const absl::Duration refresh_;
  const DnsFamily family_;
  Listener listener_;  // set by Start before the thread exists

  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Member> current_ ABSL_GUARDED_BY(mu_);
  MemberSourceStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

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
