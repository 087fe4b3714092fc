#include "cluster/registrar.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/backoff.h"

namespace kvstash::cluster {
namespace {

constexpr int64_t kMinLeaseTtlS = 2;
constexpr int64_t kMaxLeaseTtlS = 3600;

absl::Status ValidateOptions(const RegistrarOptions& options) {
  if (absl::Status s = options.etcd.Validate(); !s.ok()) return s;
  if (absl::Status s = ValidateClusterPrefix(options.prefix); !s.ok()) return s;
  if (absl::Status s = ValidateMember(options.self); !s.ok()) return s;
  if (options.lease_ttl_s < kMinLeaseTtlS || options.lease_ttl_s > kMaxLeaseTtlS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease_ttl_s ", options.lease_ttl_s, ": must be ", kMinLeaseTtlS, " to ", kMaxLeaseTtlS));
  }
  return absl::OkStatus();
}

// Whether `value`, found under our key with another lease, was put by a newer incarnation
// of this member (started later), which the key is then left to.
bool IsNewerIncarnation(absl::string_view value, const Member& self) {
  absl::StatusOr<Member> other = MemberFromJson(value);
  return other.ok() && *other != self && other->started_unix_ms >= self.started_unix_ms;
}

// Registrar over EtcdClient: Create registers once, then one thread keeps the lease alive
// and registers again when it is lost. Thread-safe; the lease itself is touched only by
// that thread (and by Stop once the thread has ended).
class RegistrarImpl final : public Registrar {
 public:
  RegistrarImpl(const RegistrarOptions& options, std::unique_ptr<EtcdClient> etcd)
      : options_(options),
        key_(MemberKey(options.prefix, options.self.id)),
        value_(MemberToJson(options.self)),
        ttl_(absl::Seconds(options.lease_ttl_s)),
        refresh_(ttl_ / 3),
        call_budget_(absl::Milliseconds(options.etcd.call_timeout_ms) *
                     static_cast<int64_t>(options.etcd.endpoints.size())),
        etcd_(std::move(etcd)),
        retry_(BackoffPolicy{100, std::min<int64_t>(absl::ToInt64Milliseconds(refresh_), 2000)}) {}

  ~RegistrarImpl() override { Stop(); }

  // The first attempt, then the thread; called once by Create.
  void Start() {
    Register();
    thread_ = std::thread([this] { Run(); });
  }

  void Stop() override {
    absl::MutexLock stop_lock(&stop_mu_);
    {
      absl::MutexLock lock(&mu_);
      if (stopping_ && !thread_.joinable()) return;
      stopping_ = true;
      stop_deadline_ = absl::Now() + call_budget_;
      cv_.SignalAll();
    }
    if (thread_.joinable()) thread_.join();
    if (lease_ != 0) {
      // No Delete: the revoke removes the key only while it is ours, never a newer
      // incarnation's.
      Count(etcd_->RevokeLease(lease_, Deadline(absl::InfiniteFuture())));
      lease_ = 0;
    }
    absl::MutexLock lock(&mu_);
    stats_.registered = false;
  }

  RegistrarStats stats() const override {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  void Run();
  // Grants a lease and puts the key with it; false (lease_ left 0) on failure.
  bool Register();
  // Refreshes the lease and checks the key: false when the lease is lost (lease_ cleared)
  // or etcd did not answer.
  bool KeepAlive();
  // Puts the key again when it is missing or under an older registration.
  void EnsureKey();
  // The lease is gone: the thread registers again.
  void LoseLease() {
    lease_ = 0;
    SetRegistered(false);
  }
  // Counts a failed call; returns whether `status` is OK.
  bool Count(const absl::Status& status);
  void SetRegistered(bool registered) {
    absl::MutexLock lock(&mu_);
    stats_.registered = registered;
  }
  bool Stopping() const {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }
  // `wanted`, or Stop's deadline when that comes first, so Stop's wait stays bounded.
  absl::Time Deadline(absl::Time wanted) const {
    absl::MutexLock lock(&mu_);
    return std::min(wanted, stop_deadline_);
  }
  // Sleeps for `d` unless stopped first; false when stopping.
  bool Sleep(absl::Duration d) {
    const absl::Time until = absl::Now() + d;
    absl::MutexLock lock(&mu_);
    while (!stopping_ && !cv_.WaitWithDeadline(&mu_, until)) {
    }
    return !stopping_;
  }

  const RegistrarOptions options_;
  const std::string key_;
  const std::string value_;
  const absl::Duration ttl_;
  const absl::Duration refresh_;
  const absl::Duration call_budget_;  // the longest one call may take, every endpoint tried
  const std::unique_ptr<EtcdClient> etcd_;

  // Owned by the thread while it runs, then by Stop.
  int64_t lease_ = 0;
  // When the last refresh (or grant) confirmed by etcd was sent: the lease lives until at
  // least this plus the TTL.
  absl::Time last_refresh_ = absl::InfinitePast();
  Backoff retry_;

  absl::Mutex stop_mu_;  // serialises Stop calls
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time stop_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  RegistrarStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

bool RegistrarImpl::Count(const absl::Status& status) {
  if (status.ok()) return true;
  absl::MutexLock lock(&mu_);
  ++stats_.etcd_errors;
  return false;
}

bool RegistrarImpl::Register() {
  const absl::Time sent = absl::Now();
  absl::StatusOr<int64_t> lease =
      etcd_->GrantLease(options_.lease_ttl_s, Deadline(sent + call_budget_));
  if (!Count(lease.status())) return false;
  if (Stopping()) {
    lease_ = *lease;  // Stop revokes it
    return false;
  }
  if (!Count(etcd_->Put(key_, value_, *lease, Deadline(absl::Now() + call_budget_)))) {
    // Else it lingers until its TTL.
    etcd_->RevokeLease(*lease, Deadline(absl::Now() + call_budget_)).IgnoreError();
    return false;
  }
  lease_ = *lease;
  last_refresh_ = sent;
  absl::MutexLock lock(&mu_);
  stats_.registered = true;
  ++stats_.registrations;
  return true;
}

bool RegistrarImpl::KeepAlive() {
  const absl::Time sent = absl::Now();
  const absl::Duration left = last_refresh_ + ttl_ - sent;
  if (left <= absl::ZeroDuration()) {
    LoseLease();  // no refresh reached etcd within the TTL
    return false;
  }
  absl::StatusOr<int64_t> ttl = etcd_->KeepAliveOnce(lease_, Deadline(sent + left / 3));
  if (ttl.ok()) {
    last_refresh_ = sent;
    {
      absl::MutexLock lock(&mu_);
      ++stats_.refreshes;
    }
    EnsureKey();
    return lease_ != 0;
  }
  Count(ttl.status());
  // Lost for sure: etcd says so, or no refresh reached it within the TTL.
  if (absl::IsNotFound(ttl.status()) || absl::Now() - last_refresh_ >= ttl_) LoseLease();
  return false;
}

void RegistrarImpl::EnsureKey() {
  // Done before the next refresh is due, so checking never delays it.
  const absl::Time deadline = Deadline(last_refresh_ + refresh_);
  if (deadline <= absl::Now()) return;  // the refresh took its time: check after the next
  absl::StatusOr<EtcdRange> range = etcd_->GetPrefix(key_, deadline);
  if (!Count(range.status())) return;
  const EtcdKeyValue* found = nullptr;
  for (const EtcdKeyValue& kv : range->kvs) {
    if (kv.key == key_) found = &kv;
  }
  if (found != nullptr && found->lease == lease_) {
    SetRegistered(true);
    return;
  }
  if (found != nullptr && IsNewerIncarnation(found->value, options_.self)) {
    SetRegistered(false);  // its key now; this one withdraws on Stop without touching it
    return;
  }
  absl::Status put = etcd_->Put(key_, value_, lease_, deadline);
  if (!Count(put)) {
    if (absl::IsNotFound(put)) LoseLease();  // the lease ended since the refresh
    return;
  }
  absl::MutexLock lock(&mu_);
  stats_.registered = true;
  ++stats_.key_restores;
}

void RegistrarImpl::Run() {
  absl::Duration wait = lease_ != 0 ? refresh_ : absl::Milliseconds(retry_.NextDelayMs());
  while (Sleep(wait)) {
    const bool had_lease = lease_ != 0;
    if (had_lease ? KeepAlive() : Register()) {
      retry_.Reset();
      // Counted from when the refresh was sent, so the time EnsureKey took is not added.
      wait = std::max(absl::ZeroDuration(), last_refresh_ + refresh_ - absl::Now());
    } else if (had_lease && lease_ == 0) {
      wait = absl::ZeroDuration();  // the lease is gone: register again at once
    } else {
      wait = absl::Milliseconds(retry_.NextDelayMs());
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Registrar>> Registrar::Create(const RegistrarOptions& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<EtcdClient>> etcd = EtcdClient::Create(options.etcd);
  if (!etcd.ok()) return etcd.status();
  auto registrar = std::make_unique<RegistrarImpl>(options, *std::move(etcd));
  registrar->Start();
  return std::unique_ptr<Registrar>(std::move(registrar));
}

}  // namespace kvstash::cluster
