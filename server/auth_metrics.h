// AuthMetrics: what authentication and the per-principal limits did, for /metrics:
//
//   kvstash_principal_calls_total{principal}            counter, calls admitted
//   kvstash_principal_throttled_total{principal,kind}   counter, calls or chunks refused
//                                                       by a limit (calls, concurrency, bytes)
//   kvstash_auth_reloads_total{result}                  counter, token file reloads (ok, error)
//
// Calls are counted here; refusals and reloads are the limiter's and the authenticator's
// own counts, read when scraped. Refusals by authentication and authorization count per
// transport in TransportMetrics (kvstash_auth_failures_total). Principals are the token
// file's (a few dozen), so a series per principal stays bounded.
//
// Thread-safety: thread-safe; a principal's first call takes a writer lock, later ones a
// reader lock and a relaxed atomic add.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/metrics/exposition.h"
#include "server/metrics/metric.h"

namespace kvstash::server {

namespace auth {
class Authenticator;
class CallLimiter;
}  // namespace auth

class AuthMetrics {
 public:
  void AddCall(absl::string_view principal) ABSL_LOCKS_EXCLUDED(mu_);

  // Appends the families above; `auth` and `limiter` may be null (none counted).
  void Collect(const auth::Authenticator* auth, const auth::CallLimiter* limiter,
               std::vector<metrics::Family>* out) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  // Counters are heap-allocated so a reference outlives rehashing.
  absl::flat_hash_map<std::string, std::unique_ptr<metrics::Counter>> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::server
