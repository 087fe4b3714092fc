// The etcd member source: a range read of the members' keys, then a watch from the
// revision after it; a watch that cannot go on (compaction, etcd gone for long) leads to a
// new read, retried with backoff, while the last member set stays in force.
#include <algorithm>
#include <map>
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
#include "common/backoff.h"

namespace kvstash::cluster {
namespace {

// How long a broken watch keeps trying the endpoints before the source reads again.
constexpr int64_t kWatchGiveUpMs = 3000;

// Thread-safety: thread-safe. Deliveries come from the watch's thread or, after a watch
// error, from the source's thread while no watch runs; deliver_mu_ keeps them one at a time.
class EtcdMemberSource final : public MemberSource {
 public:
  EtcdMemberSource(std::unique_ptr<EtcdClient> etcd, std::string prefix)
      : etcd_(std::move(etcd)), prefix_(std::move(prefix)), retry_(BackoffPolicy{100, 2000}) {}

  ~EtcdMemberSource() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      cv_.SignalAll();
    }
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Start(Listener listener, absl::Duration timeout) override;

  std::vector<Member> Current() const override {
    absl::MutexLock lock(&mu_);
    return current_;
  }

  MemberSourceStats stats() const override {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  // Reads every member, giving up at `deadline`; on success replaces the map and delivers
  // the set if it changed.
  absl::Status Read(absl::Time deadline = absl::InfiniteFuture());
  void Run();
  void OnEvents(absl::Span<const EtcdEvent> events, int64_t revision);
  // Applies `kv` to the map; a value that does not parse, or names another id than its key,
  // drops the key and counts an error.
  void PutLocked(const EtcdKeyValue& kv) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Delivers the map's members when they differ from the last set delivered.
  void DeliverIfChanged() ABSL_EXCLUSIVE_LOCKS_REQUIRED(deliver_mu_);
  void CountError(const absl::Status& why) {
    absl::MutexLock lock(&mu_);
    ++stats_.errors;
    stats_.last_error = std::string(why.message());
    stats_.connected = false;
  }

  const std::unique_ptr<EtcdClient> etcd_;
  const std::string prefix_;  // MembersPrefix(cluster prefix)
  Listener listener_;         // set once by Start, before any delivery
  Backoff retry_;             // the source's thread only
  int64_t revision_ = 0;      // of the last Read; the source's thread only

  absl::Mutex deliver_mu_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool watch_failed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Member> by_key_ ABSL_GUARDED_BY(mu_);
  std::vector<Member> current_ ABSL_GUARDED_BY(mu_);
  MemberSourceStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

absl::Status EtcdMemberSource::Start(Listener listener, absl::Duration timeout) {
  {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("member source already started");
    started_ = true;
  }
  listener_ = std::move(listener);
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status read = Read(deadline);
  while (!read.ok() && absl::Now() < deadline) {
    absl::SleepFor(std::min(absl::Milliseconds(retry_.NextDelayMs()),
                            std::max(deadline - absl::Now(), absl::Duration())));
    read = Read(deadline);
  }
  if (!read.ok()) {
    absl::MutexLock lock(&mu_);
    started_ = false;
    return absl::UnavailableError(absl::StrCat("no member set read from etcd under ", prefix_,
                                               " within ", absl::FormatDuration(timeout), ": ",
                                               read.message()));
  }
  retry_.Reset();
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

absl::Status EtcdMemberSource::Read(absl::Time deadline) {
  absl::StatusOr<EtcdRange> range = etcd_->GetPrefix(prefix_, deadline);
  {
    absl::MutexLock lock(&mu_);
    ++stats_.lookups;
  }
  if (!range.ok()) {
    CountError(range.status());
    return range.status();
  }
  revision_ = range->revision;
  absl::MutexLock deliver(&deliver_mu_);
  {
    absl::MutexLock lock(&mu_);
    stats_.connected = true;
    by_key_.clear();
    for (const EtcdKeyValue& kv : range->kvs) PutLocked(kv);
  }
  DeliverIfChanged();
  return absl::OkStatus();
}

void EtcdMemberSource::PutLocked(const EtcdKeyValue& kv) {
  absl::StatusOr<Member> member = MemberFromJson(kv.value);
  absl::Status bad = member.status();
  // Two keys naming one id would otherwise collapse into one member without a trace.
  if (member.ok() && kv.key.substr(std::min(prefix_.size(), kv.key.size())) != member->id) {
    bad = absl::InvalidArgumentError(
        absl::StrCat("member id \"", member->id, "\" does not match its key"));
  }
  if (bad.ok()) {
    by_key_[kv.key] = *std::move(member);
    return;
  }
  by_key_.erase(kv.key);
  ++stats_.errors;
  stats_.last_error = absl::StrCat("etcd key ", kv.key, ": ", bad.message());
}

void EtcdMemberSource::OnEvents(absl::Span<const EtcdEvent> events, int64_t revision) {
  absl::MutexLock deliver(&deliver_mu_);
  {
    absl::MutexLock lock(&mu_);
    stats_.connected = true;
    for (const EtcdEvent& event : events) {
      if (event.type == EtcdEvent::Type::kPut) {
        PutLocked(event.kv);
      } else {
        by_key_.erase(event.kv.key);
      }
    }
  }
  DeliverIfChanged();
}

void EtcdMemberSource::DeliverIfChanged() {
  std::vector<Member> members;
  {
    absl::MutexLock lock(&mu_);
    std::vector<Member> all;
    all.reserve(by_key_.size());
    for (const auto& [key, member] : by_key_) all.push_back(member);
    members = SortedById(std::move(all));
    if (stats_.updates > 0 && members == current_) return;
    current_ = members;
    ++stats_.updates;
  }
  listener_(members);
}

void EtcdMemberSource::Run() {
  while (true) {
    auto watch = etcd_->WatchPrefix(
        prefix_, revision_ + 1,
        [this](absl::Span<const EtcdEvent> events, int64_t revision) {
          OnEvents(events, revision);
        },
        [this](const absl::Status& why) {
          CountError(why);
          absl::MutexLock lock(&mu_);
          watch_failed_ = true;
          cv_.SignalAll();
        },
        kWatchGiveUpMs);
    if (watch.ok()) {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && !watch_failed_) cv_.Wait(&mu_);
      if (stopping_) return;
      watch_failed_ = false;
    } else {
      CountError(watch.status());
    }
    if (watch.ok()) watch->reset();  // the watch's thread ends before the source reads again
    while (!Read().ok()) {
      const absl::Time until = absl::Now() + absl::Milliseconds(retry_.NextDelayMs());
      absl::MutexLock lock(&mu_);
      while (!stopping_ && !cv_.WaitWithDeadline(&mu_, until)) {
      }
      if (stopping_) return;
    }
    retry_.Reset();
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<MemberSource>> NewEtcdMemberSource(const EtcdOptions& etcd,
                                                                  std::string prefix) {
  if (absl::Status s = ValidateClusterPrefix(prefix); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Create(etcd);
  if (!client.ok()) return client.status();
  return std::unique_ptr<MemberSource>(
      new EtcdMemberSource(*std::move(client), MembersPrefix(prefix)));
}

}  // namespace kvstash::cluster
