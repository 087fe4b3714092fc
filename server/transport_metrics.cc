#include "server/transport_metrics.h"

#include "absl/status/status.h"

namespace kvstash::server {
namespace {

using metrics::Family;
using metrics::MetricType;

// Latency buckets in microseconds: 50 us (a small unary call on loopback) to 10 s (a
// large Get over a slow link).
constexpr uint64_t kLatencyBoundsUs[] = {50,     100,     250,     500,     1000,    2500,
                                         5000,   10000,   25000,   50000,   100000,  250000,
                                         500000, 1000000, 2500000, 5000000, 10000000};

#define KVSTASH_CALL_METRIC_NAME(name, metric, ucx_op) metric,
constexpr const char* kOpNames[kOpCount] = {
    KVSTASH_CALLS(KVSTASH_CALL_METRIC_NAME, KVSTASH_CALL_METRIC_NAME)};
#undef KVSTASH_CALL_METRIC_NAME
constexpr const char* kPutResultNames[] = {"stored", "already_present", "failed"};
constexpr const char* kAuthFailureNames[] = {"unauthenticated", "permission_denied"};

// Every family of this component, in exposition order.
enum FamilyId {
  kDuration,
  kErrors,
  kReceived,
  kSent,
  kActive,
  kPuts,
  kLookups,
  kLookupChunks,
  kLookupHitChunks,
  kLookupHitTokens,
  kDirect,
  kAuthFailures,
  kFamilyCount
};
struct FamilyDef {
  const char* name;
  const char* help;
  MetricType type;
};
constexpr FamilyDef kFamilies[kFamilyCount] = {
    {"kvstash_op_duration_seconds", "Latency of calls by operation and transport.",
     MetricType::kHistogram},
    {"kvstash_errors_total", "Calls that ended with a non-OK status, by canonical code.",
     MetricType::kCounter},
    {"kvstash_transport_received_bytes_total", "Request bytes read (frames, payload included).",
     MetricType::kCounter},
    {"kvstash_transport_sent_bytes_total", "Response bytes written (frames, payload included).",
     MetricType::kCounter},
    {"kvstash_active_calls",
     "Streaming calls in progress (Put, Get); approximates connected clients.", MetricType::kGauge},
    {"kvstash_put_chunks_total", "Chunks received by Put, by result.", MetricType::kCounter},
    {"kvstash_lookups_total", "Lookup calls answered.", MetricType::kCounter},
    {"kvstash_lookup_chunks_total", "Keys named by Lookup calls.", MetricType::kCounter},
    {"kvstash_lookup_hit_chunks_total", "Leading keys Lookup found present.", MetricType::kCounter},
    {"kvstash_lookup_hit_tokens_total",
     "Tokens covered by Lookup hits (hit chunks times the namespace's chunk_tokens).",
     MetricType::kCounter},
    {"kvstash_transport_direct_bytes_total",
     "Payload bytes clients wrote (direction=in) or read (out) in the daemon's shared arena "
     "themselves (UCX direct access); also counted in the received/sent totals.",
     MetricType::kCounter},
    {"kvstash_auth_failures_total",
     "Calls refused for a missing, unknown or revoked token (reason=unauthenticated) or for "
     "lacking the right on the tenant (permission_denied).",
     MetricType::kCounter},
};

std::string CodeName(int code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace

TransportMetrics::TransportMetrics(std::string transport) : transport_(std::move(transport)) {
  latency_us_.reserve(kOpCount);
  for (int i = 0; i < kOpCount; ++i) latency_us_.emplace_back(kLatencyBoundsUs);
}

void TransportMetrics::RecordCall(Op op, int code, Clock::time_point start) {
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
  latency_us_[static_cast<int>(op)].Observe(us > 0 ? static_cast<uint64_t>(us) : 0);
  if (code > 0 && code < kCodeCount) errors_[static_cast<int>(op)][code].Add();
}

void TransportMetrics::AddLookup(uint64_t requested, uint64_t hit_chunks, uint64_t hit_tokens) {
  lookups_.Add();
  lookup_chunks_.Add(requested);
  lookup_hit_chunks_.Add(hit_chunks);
  lookup_hit_tokens_.Add(hit_tokens);
}

void TransportMetrics::Collect(std::vector<Family>* out) const {
  std::vector<Family> f(kFamilyCount);
  for (int i = 0; i < kFamilyCount; ++i) {
    f[i] = {kFamilies[i].name, kFamilies[i].help, kFamilies[i].type, {}};
  }
  const metrics::Labels t = {{"transport", transport_}};
  for (int op = 0; op < kOpCount; ++op) {
    const metrics::Labels labels = {{"op", kOpNames[op]}, {"transport", transport_}};
    f[kDuration].samples.push_back({labels, 0, latency_us_[op].Snapshot(1e6)});
    for (int code = 1; code < kCodeCount; ++code) {
      const uint64_t n = errors_[op][code].Value();
      if (n == 0) continue;  // only codes that happened: 16 zero series per op are noise
      metrics::Labels l = labels;
      l.emplace_back("code", CodeName(code));
      f[kErrors].samples.push_back({l, static_cast<double>(n), {}});
    }
  }
  auto add = [&](FamilyId id, metrics::Labels labels, double v) {
    f[id].samples.push_back({std::move(labels), v, {}});
  };
  add(kReceived, t, received_bytes_.Value());
  add(kSent, t, sent_bytes_.Value());
  add(kActive, t, active_calls_.Value());
  for (int r = 0; r < 3; ++r) {
    add(kPuts, {t[0], {"result", kPutResultNames[r]}}, put_results_[r].Value());
  }
  add(kLookups, t, lookups_.Value());
  add(kLookupChunks, t, lookup_chunks_.Value());
  add(kLookupHitChunks, t, lookup_hit_chunks_.Value());
  add(kLookupHitTokens, t, lookup_hit_tokens_.Value());
  add(kDirect, {t[0], {"direction", "in"}}, direct_in_bytes_.Value());
  add(kDirect, {t[0], {"direction", "out"}}, direct_out_bytes_.Value());
  for (int r = 0; r < 2; ++r) {
    add(kAuthFailures, {t[0], {"reason", kAuthFailureNames[r]}}, auth_failures_[r].Value());
  }
  for (Family& family : f) out->push_back(std::move(family));
}

}  // namespace kvstash::server
