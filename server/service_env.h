// ServiceEnv: what every transport's request handling shares (the store, the namespace
// registry, limits, the log, the draining flag). The request rules themselves live in
// requests.h; each transport keeps its own metrics (TransportMetrics) and drain helpers.
//
// Thread-safety: ServiceEnv is immutable after construction except `draining` and
// `unary_in_handler`, atomics, and `auth_metrics`, thread-safe; the pointees are
// thread-safe. The helpers are stateless.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kvstash/keys.h"
#include "server/auth_metrics.h"
#include "server/log.h"
#include "server/namespace_registry.h"
#include "server/request_rules.h"
#include "storage/chunk_store.h"

namespace kvstash::server {

namespace auth {
class Authenticator;
class CallLimiter;
}  // namespace auth

struct ServiceEnv {
  storage::ChunkStore* store = nullptr;   // not owned
  NamespaceRegistry* registry = nullptr;  // not owned
  Logger* log = nullptr;                  // not owned
  ServiceLimits limits;
  absl::Time start_time = absl::Now();
  // Set when shutdown begins: new calls get UNAVAILABLE, Health reports DRAINING.
  std::atomic<bool> draining{false};
  // Who may call (the token file) and how often; not owned. A null authenticator gives
  // every call every right (tests that exercise no authentication); null limiter: no limits.
  const auth::Authenticator* auth = nullptr;
  auth::CallLimiter* limiter = nullptr;
  // Calls and throttles per principal, token file reloads. Mutable: handlers see a const
  // env, and the cells are lock-free, updated from any thread.
  mutable AuthMetrics auth_metrics;
  // Unary handlers running now (streaming calls count in their transport's active calls).
  mutable std::atomic<int> unary_in_handler{0};

  // UNAVAILABLE while draining, else OK.
  absl::Status Admit() const;
};

}  // namespace kvstash::server
