// DaemonFixture: the set-up most integration tests share. It starts a real kvstashd
// (DaemonProcess), connects a Client over one of the transports and registers a namespace
// named after the running test, so every test sees its own counters.
//
//   class MyTest : public TransportFixture {
//    protected:
//     void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartDaemonOverParam()); }
//   };
//   INSTANTIATE_TEST_SUITE_P(Transports, MyTest, ::testing::ValuesIn(AllTransports()),
//                            TransportTestName);
//
// Thread-safety: a fixture is owned by the test's main thread; client_ itself is
// thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "tests/daemon_process.h"

namespace kvstash::testing {

// The ways a client reaches the daemon.
enum class Transport {
  kGrpc,       // grpc://, the control plane and the default data plane
  kUcxTcp,     // ucx:// with UCX_TLS=tcp on both sides
  kUcxShm,     // ucx:// over shared memory (UCX_TLS=sm,self), direct arena access on
  kGrpcLocal,  // unix://, gRPC over the daemon's server.local_socket
};

// Every transport, in the order parameterised suites run them, but kGrpcLocal: the same
// gRPC service, run by the suites that check what its listener changes (round trips,
// authentication).
std::vector<Transport> AllTransports();
// AllTransports() and kGrpcLocal.
std::vector<Transport> AllTransportsAndLocalSocket();
// kGrpc or kGrpcLocal.
bool IsGrpc(Transport transport);
// The UCX transports only.
std::vector<Transport> UcxTransports();
// "Grpc", "UcxTcp", "UcxShm", "GrpcLocal": usable in test names.
std::string TransportName(Transport transport);
// The transport TransportName() calls `name`; nullopt for any other name.
std::optional<Transport> TransportNamed(absl::string_view name);
// For INSTANTIATE_TEST_SUITE_P: names each case after its transport.
std::string TransportTestName(const ::testing::TestParamInfo<Transport>& info);
// The UCX_TLS list of a UCX transport ("tcp", "sm,self"); empty for gRPC.
std::string UcxTls(Transport transport);
// The daemon settings (`--set` entries) that a transport needs.
std::vector<std::string> DaemonSettingsFor(Transport transport);
// The URI a client of `transport` connects to.
std::string UriFor(const DaemonProcess& daemon, Transport transport);
// The address (HOST:PORT, or the socket path) of `transport`'s listener.
std::string AddressFor(const DaemonProcess& daemon, Transport transport);
// Connects a client over `transport` (ConnectClient's generous deadlines; ucx_tls set).
absl::StatusOr<std::unique_ptr<Client>> ConnectOver(const DaemonProcess& daemon,
                                                    Transport transport,
                                                    ClientOptions options = {});

struct DaemonFixtureOptions {
  // How client_ reaches the daemon; the daemon is configured to serve it.
  Transport transport = Transport::kGrpc;
  // Config overrides on top of the transport's (DaemonOptions::set; later entries win).
  std::vector<std::string> set = {"storage.dram.capacity_bytes=256MiB"};
  // Extra environment entries for the daemon (DaemonOptions::env).
  std::vector<std::string> env;
  // DaemonOptions::listen; and ucx.listen is this port's counterpart when ucx_port != 0.
  std::string listen = "127.0.0.1:0";
  int ucx_port = 0;
  // DaemonOptions::retry_start_ms, for restarts on the ports of a just-killed daemon.
  int64_t retry_start_ms = 0;
  // client_'s options; ucx_tls is filled in from `transport`.
  ClientOptions client;
  // Connect client_ (and register spec_) at all.
  bool connect = true;
  // The namespace client_ opens as ns_. Default: TestNamespace(the running test's name).
  std::optional<Namespace> spec;
};

class DaemonFixture : public ::testing::Test {
 protected:
  // Starts (or restarts: the previous daemon is killed first) kvstashd, connects client_
  // and opens spec_ as ns_. Fails the test (fatally) when any step fails. Without
  // options.connect, client_ (if any) stays as it is, connected to the old daemon's ports.
  void StartDaemon(const DaemonFixtureOptions& options);
  // Connects client_ to the running daemon again and reopens spec_ as ns_.
  void Reconnect();
  // A further client over the fixture's transport; nullptr (and a test failure) on error.
  std::unique_ptr<Client> NewClient(ClientOptions options = {});
  // client_'s stats, or empty ones (and a test failure) on error.
  ServerStats Stats();
  // Whether `key` is stored in ns_, in any tier.
  bool Present(const Key128& key);

  Transport transport() const { return options_.transport; }
  std::string uri() const { return UriFor(*daemon_, options_.transport); }

  DaemonFixtureOptions options_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<Client> client_;
  Namespace spec_;
  NamespaceHandle ns_;
};

// A DaemonFixture whose parameter is the transport: a suite of behaviour every transport
// must share.
class TransportFixture : public DaemonFixture, public ::testing::WithParamInterface<Transport> {
 protected:
  // StartDaemon over GetParam() with `set` as the config overrides.
  void StartDaemonOverParam(std::vector<std::string> set = DaemonFixtureOptions().set);
};

}  // namespace kvstash::testing
