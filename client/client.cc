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
#include "common/unix_socket.h"

namespace kvstash {
namespace {

using client_internal::CallContext;

// How long Connect waits for a kvstashd answer before asking what listens there instead,
// and how long that question may take.
constexpr absl::Duration kFirstWait = absl::Milliseconds(300);
constexpr absl::Duration kProbe = absl::Seconds(1);

// A setting (or the token) must change; waiting cannot help.
bool Terminal(const absl::Status& s) {
  return absl::IsFailedPrecondition(s) || absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s);
}

// OK once the daemon behind `transport` is connected and serving, within the connect
// timeout counted from `start`. A transport not connected within kFirstWait has its address probed
// once (DescribeListener), so that a URI naming another port or protocol fails at once, naming what
// answers there, rather than at the timeout.
absl::Status CheckServing(client_internal::Transport* transport,
                          const client_internal::ProbeTarget& target, absl::string_view uri,
                          const ClientOptions& options, absl::Time start) {
  const absl::Time deadline = start + absl::Milliseconds(options.connect_timeout_ms);
  absl::Status s = transport->WaitConnected(std::min(deadline, start + kFirstWait));
  if (!s.ok() && !Terminal(s)) {
    client_internal::ListenerDescription d =
        client_internal::DescribeListener(target, std::min(deadline, absl::Now() + kProbe));
    if (d.wrong_service)
      return client_internal::WrongListenerError(absl::StrCat(uri, ": ", d.what));
    s = transport->WaitConnected(deadline);
    if (!s.ok() && !Terminal(s)) {
      return absl::UnavailableError(absl::StrCat("kvstashd at ", uri, " did not answer within ",
                                                 options.connect_timeout_ms, " ms: ", s.message(),
                                                 d.what.empty() ? "" : "; ", d.what));
    }
  }
  if (Terminal(s)) return s;
  CallContext ctx;
  ctx.deadline = deadline;
  absl::StatusOr<HealthInfo> health = transport->Health(ctx);
  if (absl::IsUnimplemented(health.status())) {
    return client_internal::WrongListenerError(absl::StrCat(uri, ": ", target.Address(),
                                                            " is a gRPC server but not kvstashd (",
                                                            health.status().message(), ")"));
  }
  if (!health.ok()) {
    if (Terminal(health.status())) return health.status();
    return absl::UnavailableError(absl::StrCat(
        "kvstashd at ", uri, " connected but did not answer: ", health.status().message()));
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
  const absl::Time start = absl::Now();  // resolving the address counts too
  client_internal::TransportPtr transport;
  client_internal::ProbeTarget target{parsed->host, parsed->port, parsed->scheme, false,
                                      parsed->socket_path};
  if (parsed->scheme == client_internal::UriScheme::kUcx) {
    if (absl::Status s = client_internal::CheckNoTlsOptions(options, "ucx"); !s.ok()) return s;
    auto ucx = client_internal::UcxTransport::Create(parsed->host, parsed->port, options);
    if (!ucx.ok()) return ucx.status();
    transport = std::move(*ucx);
  } else {
    absl::StatusOr<client_internal::ChannelSecurity> security =
        parsed->socket_path.empty() ? client_internal::MakeChannelSecurity(options, parsed->tls)
                                    : client_internal::LocalSocketSecurity(options);
    if (!security.ok()) return security.status();
    target.tls = security->tls;
    const std::string arena_socket = parsed->socket_path.empty() || !options.local_direct
                                         ? std::string()
                                         : ArenaSocketPath(parsed->socket_path);
    transport = std::make_unique<client_internal::GrpcTransport>(parsed->GrpcTarget(), options,
                                                                 *security, arena_socket);
  }
  if (absl::Status s = CheckServing(transport.get(), target, uri, options, start); !s.ok()) {
    return s;
  }
  return std::unique_ptr<Client>(
      std::make_unique<client_internal::ClientImpl>(std::move(transport), options));
}

}  // namespace kvstash
