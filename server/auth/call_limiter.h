// CallLimiter: per-principal limits on calls per second, calls in flight and payload bytes
// per second (PrincipalLimits), so one client cannot starve the rest. A call over a limit
// is refused with RESOURCE_EXHAUSTED at once (never delayed: the client backs off), and
// each refusal is counted per principal for metrics.
//
// Rates are token buckets holding one second's worth (the burst), refilled continuously.
// Bytes follow a debt model: a charge is admitted while the bucket is positive and may
// drive it negative, so a chunk larger than the burst still passes on an idle bucket and
// the debt is repaid before the next charge. (storage::RateLimiter paces instead of
// refusing, and holds no burst.)
//
// State is kept by principal name, so a token file reload that rebuilds the principals
// keeps their buckets; limits are read from the Principal at each call, so a reload that
// changes them applies at once.
//
// Thread-safety: thread-safe. A principal without limits takes no lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/auth/principal.h"

namespace kvstash::server::auth {

// Refusals of one principal by kind, for metrics.
struct PrincipalRefusals {
  std::string principal;
  uint64_t calls_per_s = 0;       // over its calls_per_s
  uint64_t concurrent_calls = 0;  // over its max_concurrent_calls
  uint64_t bytes_per_s = 0;       // over its bytes_per_s
};

class CallLimiter {
 public:
  using Clock = std::function<absl::Time()>;

  // One principal's buckets and calls in flight (internal; named here for Slot).
  struct State;

  // A call in flight: counts against max_concurrent_calls until destroyed. Movable; an
  // empty (moved-from, or unlimited principal's) slot counts nothing.
  // REQUIRES: destroyed before the CallLimiter that issued it.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept : state_(other.state_) { other.state_ = nullptr; }
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { Release(); }

   private:
    friend class CallLimiter;
    explicit Slot(State* state) : state_(state) {}
    void Release();

    State* state_ = nullptr;  // not owned; null when nothing is counted
  };

  // `clock` defaults to absl::Now; tests pass a fake.
  explicit CallLimiter(Clock clock = nullptr);
  ~CallLimiter();
  CallLimiter(const CallLimiter&) = delete;
  CallLimiter& operator=(const CallLimiter&) = delete;

  // Admits a call of `p`, or RESOURCE_EXHAUSTED "principal NAME: over N calls/s" /
  // "principal NAME: over N concurrent calls". Keep the slot for the call's duration.
  absl::StatusOr<Slot> BeginCall(const Principal& p);
  // Charges `bytes` of payload moved for `p`; RESOURCE_EXHAUSTED "principal NAME: over
  // N bytes/s" while its byte bucket is in debt.
  absl::Status ChargeBytes(const Principal& p, uint64_t bytes);

  // Refusal counts of every principal limited so far, sorted by name.
  std::vector<PrincipalRefusals> Refusals() const;

 private:
  // The state of `name`, created on first use; never freed before the limiter.
  State* StateOf(const std::string& name);

  const Clock clock_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<State>> states_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::server::auth
