// ClientOptions::Validate: reject settings that would make every call fail in a confusing
// way later (a zero deadline, frames larger than gRPC will carry) at Connect instead.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/bearer_token.h"
#include "common/ucx_setup.h"
#include "kvstash/client.h"
#include "proto/ucx_wire.h"

namespace kvstash {
namespace {

constexpr int64_t kMinFrameBytes = 1 << 10;
constexpr int64_t kMaxFrameBytes = 64 << 20;
constexpr int64_t kMaxRetries = 100;
constexpr int64_t kMaxThreadsOrConnections = 256;
// Well under UCX's keepalive interval (20 s), which sets how fast an idle queue fills.
constexpr int64_t kMaxIdleProgressMs = 10000;
constexpr int64_t kMaxCopyThreads = 16;
constexpr int64_t kMinTcpSegmentBytes = ucx_setup::kMinTcpSegmentBytes;
constexpr int64_t kMaxTcpSegmentBytes = ucx_setup::kMaxTcpSegmentBytes;

constexpr int64_t kMaxReplicas = 8;
constexpr int64_t kMaxHotFetches = 1000000;

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("ClientOptions.", field, " = ", value, " is out of range [", lo, ", ", hi, "]"));
}

// ClusterOptions' fields are named as ClientOptions.cluster.<field>, where callers set them.
absl::Status CheckClusterRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi) {
  return CheckRange(absl::StrCat("cluster.", field), value, lo, hi);
}

// A token travels in an HTTP/2 header and a length-prefixed UCX field; whitespace or a
// control character is a copy-and-paste accident (a trailing newline), never part of one.
// The message names where the token came from, never the token.
absl::Status CheckToken(const std::string& token, bool from_env) {
  const std::string source = from_env ? std::string("$") + kTokenEnvVar : "ClientOptions.token";
  if (token.size() > wire::ucx::kMaxTokenBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, " is longer than ", wire::ucx::kMaxTokenBytes, " bytes"));
  }
  for (const char c : token) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat(source,
                       " contains whitespace or a control character (a trailing "
                       "newline from the token file?)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ClientOptions::EffectiveToken() const {
  if (!token.empty()) return token;
  const char* env = std::getenv(kTokenEnvVar);
  return env == nullptr ? std::string() : std::string(env);
}

absl::Status ClientOptions::Validate() const {
  constexpr int64_t kMax = INT64_MAX;
  absl::Status s = CheckRange("deadline_ms", deadline_ms, 1, kMax);
  if (s.ok()) s = CheckRange("connect_timeout_ms", connect_timeout_ms, 1, kMax);
  if (s.ok()) s = CheckRange("max_retries", max_retries, 0, kMaxRetries);
  if (s.ok()) s = CheckRange("initial_backoff_ms", initial_backoff_ms, 1, kMax);
  if (s.ok()) s = CheckRange("max_backoff_ms", max_backoff_ms, initial_backoff_ms, kMax);
  if (s.ok()) s = CheckRange("frame_bytes", frame_bytes, kMinFrameBytes, kMaxFrameBytes);
  if (s.ok()) s = CheckRange("connections", connections, 1, kMaxThreadsOrConnections);
  if (s.ok()) s = CheckRange("async_threads", async_threads, 1, kMaxThreadsOrConnections);
  if (s.ok()) s = CheckRange("ucx_idle_progress_ms", ucx_idle_progress_ms, 0, kMaxIdleProgressMs);
  if (s.ok()) s = CheckRange("ucx_copy_threads", ucx_copy_threads, 0, kMaxCopyThreads);
  if (s.ok()) {
    s = CheckRange("ucx_tcp_segment_bytes", ucx_tcp_segment_bytes, kMinTcpSegmentBytes,
                   kMaxTcpSegmentBytes);
  }
  if (s.ok()) s = CheckToken(EffectiveToken(), token.empty());
  return s;
}

absl::Status ClusterOptions::Validate() const {
  constexpr int64_t kMax = INT64_MAX;
  if (transport != "grpc" && transport != "grpcs" && transport != "ucx") {
    return absl::InvalidArgumentError(absl::StrCat("ClientOptions.cluster.transport = \"",
                                                   transport, "\" is not grpc, grpcs or ucx"));
  }
  absl::Status s = CheckClusterRange("replicas", replicas, 1, kMaxReplicas);
  if (s.ok()) s = CheckClusterRange("hot_fetches", hot_fetches, 0, kMaxHotFetches);
  if (s.ok()) s = CheckClusterRange("node_deadline_ms", node_deadline_ms, 1, kMax);
  if (s.ok()) s = CheckClusterRange("breaker_failures", breaker_failures, 1, kMax);
  if (s.ok()) s = CheckClusterRange("breaker_open_ms", breaker_open_ms, 1, kMax);
  if (s.ok()) s = CheckClusterRange("handover_ms", handover_ms, 0, kMax);
  if (s.ok()) s = CheckClusterRange("dns_refresh_ms", dns_refresh_ms, 1, kMax);
  return s;
}

}  // namespace kvstash
