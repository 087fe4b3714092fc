#include "tests/daemon_fixture.h"

#include "absl/strings/str_cat.h"
#include "tests/test_util.h"

namespace kvstash::testing {

namespace {

struct TransportInfo {
  Transport transport;
  const char* name;
  const char* ucx_tls;
};

constexpr TransportInfo kTransports[] = {
    {Transport::kGrpc, "Grpc", ""},
    {Transport::kUcxTcp, "UcxTcp", "tcp"},
    {Transport::kUcxShm, "UcxShm", "sm,self"},
    {Transport::kGrpcLocal, "GrpcLocal", ""},
};

const TransportInfo& InfoOf(Transport transport) {
  for (const TransportInfo& info : kTransports) {
    if (info.transport == transport) return info;
  }
  return kTransports[0];
}

}  // namespace

std::vector<Transport> AllTransports() {
  std::vector<Transport> all;
  for (Transport t : AllTransportsAndLocalSocket()) {
    if (t != Transport::kGrpcLocal) all.push_back(t);
  }
  return all;
}

std::vector<Transport> AllTransportsAndLocalSocket() {
  std::vector<Transport> all;
  for (const TransportInfo& info : kTransports) all.push_back(info.transport);
  return all;
}

bool IsGrpc(Transport transport) {
  return transport == Transport::kGrpc || transport == Transport::kGrpcLocal;
}

std::vector<Transport> UcxTransports() { return {Transport::kUcxTcp, Transport::kUcxShm}; }

std::string TransportName(Transport transport) { return InfoOf(transport).name; }

std::optional<Transport> TransportNamed(absl::string_view name) {
  for (const TransportInfo& info : kTransports) {
    if (name == info.name) return info.transport;
  }
  return std::nullopt;
}

std::string TransportTestName(const ::testing::TestParamInfo<Transport>& info) {
  return TransportName(info.param);
}

std::string UcxTls(Transport transport) { return InfoOf(transport).ucx_tls; }

std::vector<std::string> DaemonSettingsFor(Transport transport) {
  if (IsGrpc(transport)) return {};
  // The background fault-in of a shared arena would only compete with the tests for CPU.
  return {"storage.dram.prefault=false", "ucx.tls=" + UcxTls(transport)};
}

std::string UriFor(const DaemonProcess& daemon, Transport transport) {
  if (transport == Transport::kGrpcLocal) return daemon.local_uri();
  return transport == Transport::kGrpc ? daemon.uri() : daemon.ucx_uri();
}

std::string AddressFor(const DaemonProcess& daemon, Transport transport) {
  if (transport == Transport::kGrpcLocal) return daemon.ready().local;
  return transport == Transport::kGrpc ? daemon.address() : daemon.ucx_address();
}

absl::StatusOr<std::unique_ptr<Client>> ConnectOver(const DaemonProcess& daemon,
                                                    Transport transport, ClientOptions options) {
  options.ucx_tls = UcxTls(transport);
  return ConnectClient(UriFor(daemon, transport), options);
}

void TransportFixture::StartDaemonOverParam(std::vector<std::string> set) {
  DaemonFixtureOptions options;
  options.transport = GetParam();
  options.set = std::move(set);
  StartDaemon(options);
}

void DaemonFixture::StartDaemon(const DaemonFixtureOptions& options) {
  daemon_.reset();
  options_ = options;
  if (!options_.spec) {
    options_.spec = TestNamespace(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  DaemonOptions daemon_options;
  daemon_options.listen = options_.listen;
  daemon_options.retry_start_ms = options_.retry_start_ms;
  daemon_options.env = options_.env;
  daemon_options.local_socket = options_.transport == Transport::kGrpcLocal;
  daemon_options.set = DaemonSettingsFor(options_.transport);
  if (options_.ucx_port != 0) {
    daemon_options.set.push_back(absl::StrCat("ucx.listen=127.0.0.1:", options_.ucx_port));
  }
  daemon_options.set.insert(daemon_options.set.end(), options_.set.begin(), options_.set.end());
  auto daemon = DaemonProcess::Start(daemon_options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  daemon_ = std::move(*daemon);
  if (!IsGrpc(options_.transport)) {
    ASSERT_NE(daemon_->ucx_port(), 0) << "no ucx= line in the ready file";
  }
  if (options_.connect) {
    ASSERT_NO_FATAL_FAILURE(Reconnect());
  }
}

void DaemonFixture::Reconnect() {
  client_.reset();
  auto client = ConnectOver(*daemon_, options_.transport, options_.client);
  ASSERT_TRUE(client.ok()) << client.status();
  client_ = std::move(*client);
  spec_ = *options_.spec;
  auto ns = client_->OpenNamespace(spec_);
  ASSERT_TRUE(ns.ok()) << ns.status();
  ns_ = *ns;
}

std::unique_ptr<Client> DaemonFixture::NewClient(ClientOptions options) {
  auto client = ConnectOver(*daemon_, options_.transport, options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

ServerStats DaemonFixture::Stats() {
  auto stats = client_->Stats();
  EXPECT_TRUE(stats.ok()) << stats.status();
  return stats.ok() ? *stats : ServerStats{};
}

bool DaemonFixture::Present(const Key128& key) {
  auto present = client_->Exists(ns_, {key});
  EXPECT_TRUE(present.ok()) << present.status();
  return present.ok() && (*present)[0] != ChunkTier::kNone;
}

}  // namespace kvstash::testing
