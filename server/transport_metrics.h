// TransportMetrics: the per-transport request metrics of the data path (one instance per
// transport; the Server owns gRPC's and UCX's). Declared in one list in transport_metrics.cc:
//
//   kvstash_op_duration_seconds{op,transport}        histogram, call latency
//   kvstash_errors_total{op,transport,code}          counter, calls that ended non-OK
//   kvstash_transport_received_bytes_total{transport} counter, request bytes read
//   kvstash_transport_sent_bytes_total{transport}    counter, response bytes written
//   kvstash_active_calls{transport}                  gauge, streaming calls in progress
//                                                    (approximates connected clients)
//   kvstash_put_chunks_total{transport,result}       counter, stored|already_present|failed
//   kvstash_lookups_total{transport}                 counter, Lookup calls answered
//   kvstash_lookup_chunks_total{transport}           counter, keys asked about
//   kvstash_lookup_hit_chunks_total{transport}       counter, leading keys found
//   kvstash_lookup_hit_tokens_total{transport}       counter, hit chunks x chunk_tokens
//   kvstash_transport_direct_bytes_total{transport,direction}  counter, payload bytes
//                                                    clients moved in the shared arena
//   kvstash_auth_failures_total{transport,reason}    counter, calls refused for their token
//                                                    (unauthenticated) or rights
//                                                    (permission_denied)
//
// Thread-safety: thread-safe; every update is a relaxed atomic add (no locks, no
// allocation), Collect() reads the cells without stopping writers.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/calls.h"
#include "server/metrics/exposition.h"
#include "server/metrics/metric.h"

namespace kvstash::server {

// Every call of the wire API (proto/calls.h), in metrics order.
enum class Op : int { KVSTASH_CALLS(KVSTASH_CALL_ENUMERATOR, KVSTASH_CALL_ENUMERATOR) };
inline constexpr int kOpCount = 0 KVSTASH_CALLS(KVSTASH_CALL_COUNT, KVSTASH_CALL_COUNT);

enum class PutResult : int { kStored, kAlreadyPresent, kFailed };
enum class AuthFailure : int { kUnauthenticated, kPermissionDenied };

class TransportMetrics {
 public:
  using Clock = std::chrono::steady_clock;
  // `transport` is the label value, e.g. "grpc".
  explicit TransportMetrics(std::string transport);

  // One finished call: its latency since `start` and, when `code` is not 0 (OK), an
  // error of that canonical status code.
  void RecordCall(Op op, int code, Clock::time_point start);
  void AddReceivedBytes(uint64_t n) { received_bytes_.Add(n); }
  void AddSentBytes(uint64_t n) { sent_bytes_.Add(n); }
  // Payload a client wrote (`in`) or read in the shared arena; counted as received/sent too.
  void AddDirectBytes(bool in, uint64_t n) {
    (in ? direct_in_bytes_ : direct_out_bytes_).Add(n);
    (in ? received_bytes_ : sent_bytes_).Add(n);
  }
  void CallStarted() { active_calls_.Add(1); }
  void CallEnded() { active_calls_.Add(-1); }
  int64_t active_calls() const { return active_calls_.Value(); }
  void AddPutResult(PutResult r) { put_results_[static_cast<int>(r)].Add(); }
  void AddLookup(uint64_t requested, uint64_t hit_chunks, uint64_t hit_tokens);
  void AddAuthFailure(AuthFailure reason) { auth_failures_[static_cast<int>(reason)].Add(); }

  // Appends this transport's families.
  void Collect(std::vector<metrics::Family>* out) const;

 private:
  static constexpr int kCodeCount = 17;  // absl/gRPC canonical codes 0..16

  const std::string transport_;
  std::vector<metrics::Histogram> latency_us_;  // by Op
  std::array<std::array<metrics::Counter, kCodeCount>, kOpCount> errors_;
  metrics::Counter received_bytes_;
  metrics::Counter sent_bytes_;
  metrics::Gauge active_calls_;
  std::array<metrics::Counter, 3> put_results_;  // by PutResult
  metrics::Counter lookups_;
  metrics::Counter lookup_chunks_;
  metrics::Counter lookup_hit_chunks_;
  metrics::Counter lookup_hit_tokens_;
  metrics::Counter direct_in_bytes_;
  metrics::Counter direct_out_bytes_;
  std::array<metrics::Counter, 2> auth_failures_;  // by AuthFailure
};

}  // namespace kvstash::server
