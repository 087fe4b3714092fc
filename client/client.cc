// Client::Connect: picks the transport from the URI scheme and proves the daemon answers
// before handing out a client, so a wrong address fails here rather than at first use.
#include "kvstash/client.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client_impl.h"
#include "client/cluster_client.h"
#include "client/grpc_tls.h"
#include "client/grpc_transport.h"
#include "client/ucx_transport.h"
#include "client/uri.h"

namespace kvstash {
namespace {

using client_internal::CallContext;

// UNAVAILABLE unless the daemon behind `transport` is connected and serving by `deadline`.
absl::Status CheckServing(client_internal::Transport* transport, absl::string_view uri,
                          const ClientOptions& options) {
  absl::Time deadline = absl::Now() + absl::Milliseconds(options.connect_timeout_ms);
  absl::Status s = transport->WaitConnected(deadline);
  absl::StatusOr<HealthInfo> health;
  if (s.ok()) {
    CallContext ctx;
    ctx.deadline = deadline;
    health = transport->Health(ctx);
    s = health.status();
  }
  // A setting (or the token) must change; waiting cannot help.
  if (absl::IsFailedPrecondition(s) || absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s)) {
    return s;
  }
  if (!s.ok()) {
    return absl::UnavailableError(absl::StrCat("kvstashd at ", uri, " did not answer within ",
                                               options.connect_timeout_ms, " ms: ", s.message()));
  }
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
  if (absl::Status s = CheckServing(transport.get(), uri, options); !s.ok()) return s;
  return std::unique_ptr<Client>(
      std::make_unique<client_internal::ClientImpl>(std::move(transport), options));
}

}  // namespace kvstash
