// Client::Connect: picks the transport from the URI scheme and proves the daemon answers
// before handing out a client, so a wrong address fails here rather than at first use.
#include "kvstash/client.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client_impl.h"
#include "client/cluster_client.h"
#include "client/grpc_tls.h"
#include "client/grpc_transport.h"
#include "client/listener_probe.h"
#include "client/ucx_transport.h"
#include "client/uri.h"

namespace kvstash {
namespace {

using client_internal::CallContext;

// How long Connect waits for a kvstashd answer before asking what listens there instead,
// and how long that question may take.
constexpr int64_t kFirstWaitMs = 300;
constexpr int64_t kProbeMs = 1000;

// The status for an address where no kvstashd answered in time: FAILED_PRECONDITION naming
// what answers there instead when something else does (the URI must change), else
// UNAVAILABLE with `s`'s reason.
absl::Status NotServing(const client_internal::ParsedUri& parsed, absl::string_view uri,
                        const ClientOptions& options, const absl::Status& s) {
  const absl::Time probe_deadline =
      absl::Now() + absl::Milliseconds(std::min<int64_t>(kProbeMs, options.connect_timeout_ms));
  client_internal::ListenerDescription d =
      client_internal::DescribeListener(parsed.host, parsed.port, parsed.scheme, probe_deadline);
  if (d.wrong_service) return absl::FailedPreconditionError(absl::StrCat(uri, ": ", d.what));
  return absl::UnavailableError(absl::StrCat("kvstashd at ", uri, " did not answer within ",
                                             options.connect_timeout_ms, " ms: ", s.message(),
                                             d.what.empty() ? "" : "; ", d.what));
}

// A setting (or the token) must change; waiting cannot help.
bool Terminal(const absl::Status& s) {
  return absl::IsFailedPrecondition(s) || absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s);
}

// OK once the daemon behind `transport` is connected and serving, within the connect
// timeout. A listener that does not answer as kvstashd within kFirstWaitMs is probed once
// (NotServing) so that a URI naming another port fails at once rather than at the timeout.
absl::Status CheckServing(client_internal::Transport* transport,
                          const client_internal::ParsedUri& parsed, absl::string_view uri,
                          const ClientOptions& options) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::Milliseconds(options.connect_timeout_ms);
  absl::Status s =
      transport->WaitConnected(std::min(deadline, start + absl::Milliseconds(kFirstWaitMs)));
  if (!s.ok() && !Terminal(s)) {
    absl::Status probed = NotServing(parsed, uri, options, s);
    if (absl::IsFailedPrecondition(probed)) return probed;
    s = transport->WaitConnected(deadline);
  }
  absl::StatusOr<HealthInfo> health;
  if (s.ok()) {
    CallContext ctx;
    ctx.deadline = deadline;
    health = transport->Health(ctx);
    s = health.status();
  }
  if (absl::IsUnimplemented(s)) {
    return absl::FailedPreconditionError(absl::StrCat(
        uri, ": ", parsed.HostPort(), " is a gRPC server but not kvstashd (", s.message(), ")"));
  }
  if (Terminal(s)) return s;
  if (!s.ok()) return NotServing(parsed, uri, options, s);
  if (!health->serving) {
    return absl::UnavailableError(absl::StrCat("kvstashd at ", uri, " is draining"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(absl::string_view uri,
                                                        const ClientOptions& options) {
  if (client_internal::IsClusterUri(uri)) {
    return client_internal::ClusterClient::Connect(uri, options);
  }
  absl::StatusOr<client_internal::ParsedUri> parsed = client_internal::ParseUri(uri);
  if (!parsed.ok()) return parsed.status();
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  client_internal::TransportPtr transport;
  if (parsed->scheme == client_internal::UriScheme::kUcx) {
    if (absl::Status s = client_internal::CheckNoTlsOptions(options); !s.ok()) return s;
    auto ucx = client_internal::UcxTransport::Create(parsed->host, parsed->port, options);
    if (!ucx.ok()) return ucx.status();
    transport = std::move(*ucx);
  } else {
    absl::StatusOr<client_internal::ChannelSecurity> security =
        client_internal::MakeChannelSecurity(options, parsed->tls);
    if (!security.ok()) return security.status();
    transport =
        std::make_unique<client_internal::GrpcTransport>(parsed->HostPort(), options, *security);
  }
  if (absl::Status s = CheckServing(transport.get(), *parsed, uri, options); !s.ok()) return s;
  return std::unique_ptr<Client>(
      std::make_unique<client_internal::ClientImpl>(std::move(transport), options));
}

}  // namespace kvstash
