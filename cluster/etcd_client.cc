#include "cluster/etcd_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cluster/etcd_internal.h"
#include "common/host_port.h"

namespace kvstash::cluster {
namespace {

using etcd_internal::Endpoint;
using etcd_internal::Endpoints;
using etcd_internal::FromGrpc;
using etcd_internal::FromProto;
using etcd_internal::IsEndpointFailure;
using etcd_internal::PrefixEnd;

constexpr int64_t kMaxCallTimeoutMs = 600000;

// An endpoint without its scheme and trailing '/'.
struct BareEndpoint {
  std::string host_port;
  enum class Scheme { kNone, kHttp, kHttps } scheme = Scheme::kNone;
};

// Strips an optional "http://" or "https://" and a trailing '/'; INVALID_ARGUMENT for
// another scheme or a bad host:port.
absl::StatusOr<BareEndpoint> StripScheme(absl::string_view endpoint) {
  BareEndpoint out;
  absl::string_view rest = endpoint;
  if (absl::StartsWithIgnoreCase(rest, "http://")) {
    rest.remove_prefix(7);
    out.scheme = BareEndpoint::Scheme::kHttp;
  } else if (absl::StartsWithIgnoreCase(rest, "https://")) {
    rest.remove_prefix(8);
    out.scheme = BareEndpoint::Scheme::kHttps;
  } else if (absl::StrContains(rest, "://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd endpoint \"", endpoint, "\": the scheme must be http:// or https://"));
  }
  if (absl::EndsWith(rest, "/")) rest.remove_suffix(1);
  absl::StatusOr<HostPort> parsed = ParseHostPort(rest);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd endpoint \"", endpoint, "\": ", parsed.status().message()));
  }
  out.host_port = parsed->ToString();
  return out;
}

// The one rule tying an endpoint's scheme to TLS: http:// means plaintext, https:// TLS.
absl::Status CheckScheme(const BareEndpoint& bare, absl::string_view entry, bool tls) {
  if (bare.scheme == BareEndpoint::Scheme::kHttp && tls) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd endpoint \"", entry, "\": http:// with TLS (https:// or TLS files elsewhere)"));
  }
  if (bare.scheme == BareEndpoint::Scheme::kHttps && !tls) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd endpoint \"", entry, "\": https:// needs TLS options"));
  }
  return absl::OkStatus();
}

// Reconnects within a second of etcd coming back: gRPC's default backoff grows to two
// minutes, and after a failure its channel waits for the name to be re-resolved, which the
// DNS resolver otherwise allows only every 30 s (its "minimum reconnect backoff" is the
// connect timeout and stays at its default). Pings an idle connection so a dead peer is
// noticed on a quiet watch.
grpc::ChannelArguments ChannelArgs() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, 100);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return args;
}

// EtcdClient over gRPC: each call tries the endpoints in turn from the one that answered
// last, each attempt bounded by call_timeout_ms. Thread-safe.
class GrpcEtcdClient final : public EtcdClient {
 public:
  explicit GrpcEtcdClient(std::shared_ptr<Endpoints> endpoints)
      : endpoints_(std::move(endpoints)) {}

  absl::StatusOr<EtcdRange> GetPrefix(absl::string_view prefix) override {
    return GetPrefix(prefix, absl::InfiniteFuture());
  }
  absl::Status Put(absl::string_view key, absl::string_view value, int64_t lease) override {
    return Put(key, value, lease, absl::InfiniteFuture());
  }
  absl::StatusOr<int64_t> GrantLease(int64_t ttl_s) override {
    return GrantLease(ttl_s, absl::InfiniteFuture());
  }
  absl::StatusOr<int64_t> KeepAliveOnce(int64_t lease) override {
    return KeepAliveOnce(lease, absl::InfiniteFuture());
  }
  absl::Status RevokeLease(int64_t lease) override {
    return RevokeLease(lease, absl::InfiniteFuture());
  }

  absl::StatusOr<EtcdRange> GetPrefix(absl::string_view prefix, absl::Time deadline) override {
    etcdserverpb::RangeRequest request;
    request.set_key(std::string(prefix));
    request.set_range_end(PrefixEnd(prefix));
    etcdserverpb::RangeResponse response;
    absl::Status status = Call(
        "Range",
        [&](const Endpoint& ep, grpc::ClientContext* ctx) {
          return ep.kv->Range(ctx, request, &response);
        },
        deadline);
    if (!status.ok()) return status;
    EtcdRange range;
    range.revision = response.header().revision();
    range.kvs.reserve(response.kvs_size());
    for (const etcdserverpb::KeyValue& kv : response.kvs()) range.kvs.push_back(FromProto(kv));
    return range;
  }

  absl::Status Put(absl::string_view key, absl::string_view value, int64_t lease,
                   absl::Time deadline) override {
    etcdserverpb::PutRequest request;
    request.set_key(std::string(key));
    request.set_value(std::string(value));
    request.set_lease(lease);
    etcdserverpb::PutResponse response;
    return Call(
        "Put",
        [&](const Endpoint& ep, grpc::ClientContext* ctx) {
          return ep.kv->Put(ctx, request, &response);
        },
        deadline);
  }

  absl::Status Delete(absl::string_view key) override {
    etcdserverpb::DeleteRangeRequest request;
    request.set_key(std::string(key));
    etcdserverpb::DeleteRangeResponse response;
    return Call(
        "DeleteRange",
        [&](const Endpoint& ep, grpc::ClientContext* ctx) {
          return ep.kv->DeleteRange(ctx, request, &response);
        },
        absl::InfiniteFuture());
  }

  absl::StatusOr<int64_t> GrantLease(int64_t ttl_s, absl::Time deadline) override {
    if (ttl_s <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("lease TTL ", ttl_s, " s: must be > 0"));
    }
    etcdserverpb::LeaseGrantRequest request;
    request.set_ttl(ttl_s);
    etcdserverpb::LeaseGrantResponse response;
    absl::Status status = Call(
        "LeaseGrant",
        [&](const Endpoint& ep, grpc::ClientContext* ctx) {
          return ep.lease->LeaseGrant(ctx, request, &response);
        },
        deadline);
    if (!status.ok()) return status;
    if (!response.error().empty()) {
      return absl::InternalError(absl::StrCat("etcd LeaseGrant: ", response.error()));
    }
    return response.id();
  }

  absl::StatusOr<int64_t> KeepAliveOnce(int64_t lease, absl::Time deadline) override {
    etcdserverpb::LeaseKeepAliveRequest request;
    request.set_id(lease);
    etcdserverpb::LeaseKeepAliveResponse response;
    absl::Status status = Call(
        "LeaseKeepAlive",
        [&](const Endpoint& ep, grpc::ClientContext* ctx) {
          auto stream = ep.lease->LeaseKeepAlive(ctx);
          if (stream->Write(request) && stream->Read(&response)) {
            // One answer is all this call wants; cancelling ends the stream at once.
            ctx->TryCancel();
            stream->Finish().IgnoreError();
            return grpc::Status::OK;
          }
          return stream->Finish();
        },
        deadline);
    if (!status.ok()) return status;
    if (response.ttl() <= 0) {
      return absl::NotFoundError(absl::StrCat("etcd lease ", lease, " expired or was revoked"));
    }
    return response.ttl();
  }

  absl::Status RevokeLease(int64_t lease, absl::Time deadline) override {
    etcdserverpb::LeaseRevokeRequest request;
    request.set_id(lease);
    etcdserverpb::LeaseRevokeResponse response;
    return Call(
        "LeaseRevoke",
        [&](const Endpoint& ep, grpc::ClientContext* ctx) {
          return ep.lease->LeaseRevoke(ctx, request, &response);
        },
        deadline);
  }

  absl::StatusOr<std::unique_ptr<EtcdWatch>> WatchPrefix(
      std::string prefix, int64_t start_revision,
      std::function<void(absl::Span<const EtcdEvent> events, int64_t revision)> on_events,
      std::function<void(const absl::Status& why)> on_error, int64_t give_up_ms) override {
    if (!on_events || !on_error) {
      return absl::InvalidArgumentError("etcd watch: on_events and on_error are required");
    }
    if (start_revision < 0 || give_up_ms < 0) {
      return absl::InvalidArgumentError("etcd watch: negative start revision or give-up time");
    }
    return etcd_internal::StartWatch(endpoints_, std::move(prefix), start_revision,
                                     std::move(on_events), std::move(on_error), give_up_ms);
  }

 private:
  using Attempt = std::function<grpc::Status(const Endpoint& ep, grpc::ClientContext* ctx)>;

  // Runs `attempt` on each endpoint in turn until one answers or `deadline` passes; only an
  // unreachable or too slow endpoint moves the call on, any other error is etcd's answer.
  absl::Status Call(absl::string_view name, const Attempt& attempt, absl::Time deadline) {
    const size_t n = endpoints_->list.size();
    const size_t start = endpoints_->preferred.load(std::memory_order_relaxed);
    std::string failures;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (start + k) % n;
      const Endpoint& ep = endpoints_->list[i];
      const absl::Time now = absl::Now();
      if (now >= deadline) {
        absl::StrAppend(&failures, failures.empty() ? "" : "; ", "deadline passed before ",
                        ep.address, " was tried");
        break;
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(
          std::min(deadline, now + absl::Milliseconds(endpoints_->options.call_timeout_ms))));
      grpc::Status status = attempt(ep, &ctx);
      if (status.ok()) {
        endpoints_->preferred.store(i, std::memory_order_relaxed);
        return absl::OkStatus();
      }
      if (!IsEndpointFailure(status)) return FromGrpc(status, name, ep.address);
      // The next call starts past a failed endpoint: a caller retrying under a short
      // deadline (a lease refresh) would otherwise meet the same hung endpoint each time.
      size_t expected = i;
      endpoints_->preferred.compare_exchange_strong(expected, (i + 1) % n,
                                                    std::memory_order_relaxed);
      absl::StrAppend(&failures, failures.empty() ? "" : "; ", ep.address, ": ",
                      status.error_message());
    }
    return absl::UnavailableError(
        absl::StrCat("etcd ", name, ": no endpoint answered (", failures, ")"));
  }

  std::shared_ptr<Endpoints> endpoints_;
};

}  // namespace

absl::Status EtcdOptions::Validate() const {
  if (endpoints.empty()) return absl::InvalidArgumentError("etcd endpoints: none given");
  for (const std::string& endpoint : endpoints) {
    absl::StatusOr<BareEndpoint> bare = StripScheme(endpoint);
    if (!bare.ok()) return bare.status();
    if (absl::Status s = CheckScheme(*bare, endpoint, tls); !s.ok()) return s;
  }
  if (!tls && tls_files.any()) {
    return absl::InvalidArgumentError("etcd: TLS files set but tls is off");
  }
  if (call_timeout_ms < 1 || call_timeout_ms > kMaxCallTimeoutMs) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd call_timeout_ms ", call_timeout_ms, ": must be 1..", kMaxCallTimeoutMs));
  }
  return absl::OkStatus();
}

absl::StatusOr<EtcdOptions> EtcdOptionsFrom(absl::string_view list,
                                            const TlsChannelFiles& tls_files) {
  std::vector<std::pair<absl::string_view, BareEndpoint>> parsed;
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("etcd endpoints \"", list, "\": empty entry (expected host:port,...)"));
    }
    absl::StatusOr<BareEndpoint> bare = StripScheme(entry);
    if (!bare.ok()) return bare.status();
    parsed.emplace_back(entry, *std::move(bare));
  }
  EtcdOptions out;
  out.tls_files = tls_files;
  out.tls = tls_files.any();
  for (const auto& [entry, bare] : parsed) out.tls |= bare.scheme == BareEndpoint::Scheme::kHttps;
  // With TLS on, an http:// entry is a contradiction: mixed schemes, or http:// with files.
  for (auto& [entry, bare] : parsed) {
    if (absl::Status s = CheckScheme(bare, entry, out.tls); !s.ok()) return s;
    out.endpoints.push_back(std::move(bare.host_port));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(const EtcdOptions& options) {
  absl::Status valid = options.Validate();
  if (!valid.ok()) return valid;
  auto endpoints = std::make_shared<Endpoints>();
  endpoints->options = options;
  endpoints->options.endpoints.clear();  // normalised below: no scheme, no trailing '/'
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options.tls) {
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> tls =
        MakeTlsChannelCredentials(options.tls_files);
    if (!tls.ok()) return tls.status();
    credentials = *std::move(tls);
  }
  for (const std::string& entry : options.endpoints) {
    Endpoint ep;
    ep.address = StripScheme(entry)->host_port;
    endpoints->options.endpoints.push_back(ep.address);
    ep.channel = grpc::CreateCustomChannel(ep.address, credentials, ChannelArgs());
    ep.kv = etcdserverpb::KV::NewStub(ep.channel);
    ep.lease = etcdserverpb::Lease::NewStub(ep.channel);
    ep.watch = etcdserverpb::Watch::NewStub(ep.channel);
    endpoints->list.push_back(std::move(ep));
  }
  return std::unique_ptr<EtcdClient>(new GrpcEtcdClient(std::move(endpoints)));
}

namespace etcd_internal {

std::string PrefixEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

bool IsEndpointFailure(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

absl::Status FromGrpc(const grpc::Status& status, absl::string_view call,
                      absl::string_view address) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat("etcd ", call, " at ", address, ": ", status.error_message()));
}

EtcdKeyValue FromProto(const etcdserverpb::KeyValue& kv) {
  EtcdKeyValue out;
  out.key = kv.key();
  out.value = kv.value();
  out.mod_revision = kv.mod_revision();
  out.lease = kv.lease();
  return out;
}

}  // namespace etcd_internal
}  // namespace kvstash::cluster
