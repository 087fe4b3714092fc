#include "cluster/registrar.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cluster/retry_delay.h"

namespace kvstash::cluster {
namespace {

constexpr int64_t kMinLeaseTtlS = 2;
constexpr int64_t kMaxLeaseTtlS = 3600;

absl::Status ValidateOptions(const RegistrarOptions& options) {
  if (absl::Status s = options.etcd.Validate(); !s.ok()) return s;
  if (absl::Status s = ValidateClusterPrefix(options.prefix); !s.ok()) return s;
  if (absl::Status s = ValidateMemberId(options.self.id); !s.ok()) return s;
  if (options.lease_ttl_s < kMinLeaseTtlS || options.lease_ttl_s > kMaxLeaseTtlS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease_ttl_s ", options.lease_ttl_s, ": must be ", kMinLeaseTtlS, " to ", kMaxLeaseTtlS));
  }
  return absl::OkStatus();
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
        refresh_(absl::Seconds(options.lease_ttl_s) / 3),
        etcd_(std::move(etcd)),
        retry_(absl::Milliseconds(100), std::min(refresh_, absl::Seconds(2))) {}

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
      cv_.SignalAll();
    }
    if (thread_.joinable()) thread_.join();
    if (lease_ != 0) {
      // Deleting first lets watchers drop the member even if the revoke is lost.
      Count(etcd_->Delete(key_));
      Count(etcd_->RevokeLease(lease_));
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
  // Refreshes the lease: false when it is lost (lease_ cleared) or etcd did not answer.
  bool KeepAlive();
  // Counts a failed call; returns whether `status` is OK.
  bool Count(const absl::Status& status);
  void SetRegistered(bool registered) {
    absl::MutexLock lock(&mu_);
    stats_.registered = registered;
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
  const absl::Duration refresh_;
  const std::unique_ptr<EtcdClient> etcd_;

  // Owned by the thread while it runs, then by Stop.
  int64_t lease_ = 0;
  absl::Time last_refresh_ = absl::InfinitePast();
  RetryDelay retry_;

  absl::Mutex stop_mu_;  // serialises Stop calls
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
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
  absl::StatusOr<int64_t> lease = etcd_->GrantLease(options_.lease_ttl_s);
  if (!Count(lease.status())) return false;
  if (!Count(etcd_->Put(key_, value_, *lease))) {
    etcd_->RevokeLease(*lease).IgnoreError();  // else it lingers until its TTL
    return false;
  }
  lease_ = *lease;
  last_refresh_ = absl::Now();
  absl::MutexLock lock(&mu_);
  stats_.registered = true;
  ++stats_.registrations;
  return true;
}

bool RegistrarImpl::KeepAlive() {
  absl::StatusOr<int64_t> ttl = etcd_->KeepAliveOnce(lease_);
  if (ttl.ok()) {
    last_refresh_ = absl::Now();
    SetRegistered(true);
    return true;
  }
  Count(ttl.status());
  // Lost for sure: etcd says so, or no refresh reached it within the TTL.
  if (absl::IsNotFound(ttl.status()) ||
      absl::Now() - last_refresh_ >= absl::Seconds(options_.lease_ttl_s)) {
    lease_ = 0;
    SetRegistered(false);
  }
  return false;
}

void RegistrarImpl::Run() {
  absl::Duration wait = lease_ != 0 ? refresh_ : retry_.Next();
  while (Sleep(wait)) {
    const bool had_lease = lease_ != 0;
    if (had_lease ? KeepAlive() : Register()) {
      retry_.Reset();
      wait = refresh_;
    } else if (had_lease && lease_ == 0) {
      wait = absl::ZeroDuration();  // the lease is gone: register again at once
    } else {
      wait = retry_.Next();
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
