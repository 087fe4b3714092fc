#include "server/auth/call_limiter.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvstash::server::auth {
namespace {

// A token bucket of `rate` per second holding at most one second's worth. `level` may go
// negative (debt) for charges admitted while it was positive.
struct Bucket {
  double level = 0;
  absl::Time refilled = absl::InfinitePast();  // InfinitePast: full at first use

  void Refill(double rate, absl::Time now) {
    if (refilled == absl::InfinitePast()) {
      level = rate;
    } else if (now > refilled) {
      level = std::min(rate, level + rate * absl::ToDoubleSeconds(now - refilled));
    }
    level = std::min(level, rate);  // a lowered limit caps what was saved up
    refilled = std::max(refilled, now);
  }
};

}  // namespace

struct CallLimiter::State {
  absl::Mutex mu;
  Bucket calls ABSL_GUARDED_BY(mu);
  Bucket bytes ABSL_GUARDED_BY(mu);
  uint32_t in_flight ABSL_GUARDED_BY(mu) = 0;
  std::atomic<uint64_t> refused_calls{0};
  std::atomic<uint64_t> refused_concurrent{0};
  std::atomic<uint64_t> refused_bytes{0};
};

CallLimiter::Slot& CallLimiter::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    state_ = other.state_;
    other.state_ = nullptr;
  }
  return *this;
}

void CallLimiter::Slot::Release() {
  if (state_ == nullptr) return;
  absl::MutexLock lock(&state_->mu);
  --state_->in_flight;
  state_ = nullptr;
}

CallLimiter::CallLimiter(Clock clock) : clock_(clock ? std::move(clock) : Clock(absl::Now)) {}

CallLimiter::~CallLimiter() = default;

CallLimiter::State* CallLimiter::StateOf(const std::string& name) {
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = states_.find(name);
    if (it != states_.end()) return it->second.get();
  }
  absl::MutexLock lock(&mu_);
  std::unique_ptr<State>& state = states_[name];
  if (state == nullptr) state = std::make_unique<State>();
  return state.get();
}

absl::StatusOr<CallLimiter::Slot> CallLimiter::BeginCall(const Principal& p) {
  const PrincipalLimits& limits = p.limits;
  if (limits.calls_per_s <= 0 && limits.max_concurrent_calls == 0) return Slot();
  State* state = StateOf(p.name);
  const absl::Time now = clock_();
  absl::MutexLock lock(&state->mu);
  if (limits.max_concurrent_calls > 0 && state->in_flight >= limits.max_concurrent_calls) {
    state->refused_concurrent.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(absl::StrCat(
        "principal ", p.name, ": over ", limits.max_concurrent_calls, " concurrent calls"));
  }
  if (limits.calls_per_s > 0) {
    state->calls.Refill(limits.calls_per_s, now);
    if (state->calls.level < 1) {
      state->refused_calls.fetch_add(1, std::memory_order_relaxed);
      return absl::ResourceExhaustedError(
          absl::StrCat("principal ", p.name, ": over ", limits.calls_per_s, " calls/s"));
    }
    state->calls.level -= 1;
  }
  if (limits.max_concurrent_calls == 0) return Slot();
  ++state->in_flight;
  return Slot(state);
}

absl::Status CallLimiter::ChargeBytes(const Principal& p, uint64_t bytes) {
  const double rate = p.limits.bytes_per_s;
  if (rate <= 0) return absl::OkStatus();
  State* state = StateOf(p.name);
  const absl::Time now = clock_();
  absl::MutexLock lock(&state->mu);
  state->bytes.Refill(rate, now);
  if (state->bytes.level <= 0) {
    state->refused_bytes.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("principal ", p.name, ": over ", static_cast<uint64_t>(rate), " bytes/s"));
  }
  state->bytes.level -= static_cast<double>(bytes);
  return absl::OkStatus();
}

std::vector<PrincipalRefusals> CallLimiter::Refusals() const {
  std::vector<PrincipalRefusals> out;
  {
    absl::ReaderMutexLock lock(&mu_);
    out.reserve(states_.size());
    for (const auto& [name, state] : states_) {
      PrincipalRefusals r;
      r.principal = name;
      r.calls_per_s = state->refused_calls.load(std::memory_order_relaxed);
      r.concurrent_calls = state->refused_concurrent.load(std::memory_order_relaxed);
      r.bytes_per_s = state->refused_bytes.load(std::memory_order_relaxed);
      out.push_back(std::move(r));
    }
  }
  std::sort(out.begin(), out.end(), [](const PrincipalRefusals& a, const PrincipalRefusals& b) {
    return a.principal < b.principal;
  });
  return out;
}

}  // namespace kvstash::server::auth
