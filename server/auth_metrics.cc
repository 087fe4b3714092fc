#include "server/auth_metrics.h"

#include <algorithm>
#include <utility>

#include "server/auth/authenticator.h"
#include "server/auth/call_limiter.h"

namespace kvstash::server {

void AuthMetrics::AddCall(absl::string_view principal) {
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = calls_.find(principal);
    if (it != calls_.end()) {
      it->second->Add();
      return;
    }
  }
  absl::MutexLock lock(&mu_);
  std::unique_ptr<metrics::Counter>& counter = calls_[principal];
  if (counter == nullptr) counter = std::make_unique<metrics::Counter>();
  counter->Add();
}

void AuthMetrics::Collect(const auth::Authenticator* auth, const auth::CallLimiter* limiter,
                          std::vector<metrics::Family>* out) const {
  using metrics::MetricType;
  metrics::Family calls{"kvstash_principal_calls_total",
                        "Calls admitted, by the principal their token names.",
                        MetricType::kCounter,
                        {}};
  {
    absl::ReaderMutexLock lock(&mu_);
    for (const auto& [name, counter] : calls_) {
      calls.samples.push_back({{{"principal", name}}, static_cast<double>(counter->Value()), {}});
    }
  }
  std::sort(calls.samples.begin(), calls.samples.end(),
            [](const auto& a, const auto& b) { return a.labels < b.labels; });
  metrics::Family throttled{
      "kvstash_principal_throttled_total",
      "Calls (kind=calls, concurrency) and Put/Get chunks (kind=bytes) refused with "
      "RESOURCE_EXHAUSTED by the principal's limits.",
      MetricType::kCounter,
      {}};
  if (limiter != nullptr) {
    for (const auth::PrincipalRefusals& r : limiter->Refusals()) {
      auto add = [&](const char* kind, uint64_t n) {
        throttled.samples.push_back(
            {{{"principal", r.principal}, {"kind", kind}}, static_cast<double>(n), {}});
      };
      add("calls", r.calls_per_s);
      add("concurrency", r.concurrent_calls);
      add("bytes", r.bytes_per_s);
    }
  }
  const auth::AuthStats stats = auth != nullptr ? auth->stats() : auth::AuthStats{};
  out->push_back(std::move(calls));
  out->push_back(std::move(throttled));
  out->push_back({"kvstash_auth_reloads_total",
                  "Token file reloads (SIGHUP or a change on disk), by result; a failed "
                  "reload keeps the previous tokens.",
                  MetricType::kCounter,
                  {{{{"result", "ok"}}, static_cast<double>(stats.reloads_ok), {}},
                   {{{"result", "error"}}, static_cast<double>(stats.reloads_failed), {}}}});
}

}  // namespace kvstash::server
