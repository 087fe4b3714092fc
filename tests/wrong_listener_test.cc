// A URI that reaches something other than the kvstashd listener it names (the metrics
// port, the other transport's listener, another gRPC server, nothing) fails Connect at
// once with an error naming the address and what answers there, and the daemon keeps
// serving everyone else.
#include <arpa/inet.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "testing/http_get.h"
#include "tests/daemon_process.h"
#include "tests/test_util.h"

namespace kvstash {
namespace {

using testing::DaemonOptions;
using testing::DaemonProcess;
using ::testing::HasSubstr;

// Long enough that failing "at once" and failing at the timeout cannot be confused.
constexpr int64_t kConnectTimeoutMs = 60000;

class WrongListenerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto d = DaemonProcess::Start(DaemonOptions{});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  // Connect's status for `uri`; fails the test when it took half the connect timeout.
  static absl::Status ConnectStatus(const std::string& uri,
                                    int64_t connect_timeout_ms = kConnectTimeoutMs) {
    ClientOptions options;
    options.connect_timeout_ms = connect_timeout_ms;
    options.max_retries = 0;
    const absl::Time start = absl::Now();
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(uri, options);
    EXPECT_LT(absl::Now() - start, absl::Milliseconds(connect_timeout_ms / 2)) << uri;
    return c.status();
  }

  static void ExpectStillServing() {
    for (const std::string& uri : {daemon_->uri(), daemon_->ucx_uri()}) {
      auto c = Client::Connect(uri);
      ASSERT_TRUE(c.ok()) << uri << ": " << c.status();
      EXPECT_TRUE((*c)->Health().ok()) << uri;
    }
  }

  static DaemonProcess* daemon_;
};

DaemonProcess* WrongListenerTest::daemon_ = nullptr;

TEST_F(WrongListenerTest, UcxUriOnTheMetricsPortNamesTheUcxListener) {
  const std::string metrics = daemon_->ready().metrics;
  absl::Status s = ConnectStatus("ucx://" + metrics);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat(metrics,
                                                  " is kvstashd's metrics endpoint, not its "
                                                  "UCX listener (ucx://",
                                                  daemon_->ucx_address(), ")")));
  ExpectStillServing();
}

TEST_F(WrongListenerTest, GrpcUriOnTheMetricsPortNamesTheGrpcListener) {
  const std::string metrics = daemon_->ready().metrics;
  absl::Status s = ConnectStatus("grpc://" + metrics);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat(metrics,
                                                  " is kvstashd's metrics endpoint, not its "
                                                  "gRPC listener (grpc://",
                                                  daemon_->address(), ")")));
}

TEST_F(WrongListenerTest, UcxUriOnTheGrpcPortSaysItIsGrpc) {
  absl::Status s = ConnectStatus("ucx://" + daemon_->address());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("use grpc://", daemon_->address())));
  ExpectStillServing();
}

// A silent listener may be a loaded gRPC server: the client waits out its timeout, then says
// what the silence suggests.
TEST_F(WrongListenerTest, GrpcUriOnTheUcxPortSuggestsUcxAtTheTimeout) {
  ClientOptions options;
  options.connect_timeout_ms = 2000;
  absl::Status s = Client::Connect("grpc://" + daemon_->ucx_address(), options).status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("use ucx://", daemon_->ucx_address())));
  ExpectStillServing();
}

TEST_F(WrongListenerTest, AnotherGrpcServerIsNotKvstashd) {
  int port = 0;
  grpc::CallbackGenericService unimplemented;  // answers every method UNIMPLEMENTED
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&unimplemented);
  std::unique_ptr<grpc::Server> other = builder.BuildAndStart();
  ASSERT_NE(other, nullptr);
  absl::Status s = ConnectStatus(absl::StrCat("grpc://127.0.0.1:", port));
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("is a gRPC server but not kvstashd"));
  other->Shutdown();
}

// A socket bound to a free loopback port, listening when `listen_backlog` > 0; its port in
// `*port`.
int BoundSocket(int listen_backlog, int* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      (listen_backlog > 0 && listen(fd, listen_backlog) != 0)) {
    close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

TEST(WrongListenerNoDaemonTest, NothingListeningIsUnavailableAndSaysRefused) {
  // A port that was free a moment ago: bound by a socket that is closed again.
  int port = 0;
  int fd = BoundSocket(0, &port);
  ASSERT_GE(fd, 0);
  close(fd);
  ClientOptions options;
  options.connect_timeout_ms = 1000;
  for (const char* scheme : {"grpc", "ucx"}) {
    absl::StatusOr<std::unique_ptr<Client>> c =
        Client::Connect(absl::StrCat(scheme, "://127.0.0.1:", port), options);
    EXPECT_TRUE(absl::IsUnavailable(c.status())) << c.status();
    EXPECT_THAT(c.status().message(), HasSubstr("connection refused")) << scheme;
  }
}

// A listener that accepts and never says a word (the kernel accepts into the backlog):
// Connect, probe included, keeps to its connect timeout.
TEST(WrongListenerNoDaemonTest, ASilentListenerCostsNoMoreThanTheConnectTimeout) {
  int port = 0;
  int fd = BoundSocket(16, &port);
  ASSERT_GE(fd, 0);
  ClientOptions options;
  options.connect_timeout_ms = 1500;
  options.max_retries = 0;
  for (const char* scheme : {"grpc", "ucx"}) {
    const absl::Time start = absl::Now();
    absl::Status s = Client::Connect(absl::StrCat(scheme, "://127.0.0.1:", port), options).status();
    const absl::Duration took = absl::Now() - start;
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    // The old probe and its diagnostic call each added a second past the timeout.
    EXPECT_LT(took, absl::Milliseconds(options.connect_timeout_ms + 700)) << scheme << ": " << s;
  }
  close(fd);
}

// A daemon bound to every interface publishes its listeners as bound; a client that reached
// the metrics endpoint at some host is told the listener at that host.
TEST(WrongListenerWildcardTest, WildcardListenersAreNamedByTheHostReached) {
  DaemonOptions options;
  options.listen = "0.0.0.0:0";
  options.set = {"storage.dram.capacity_bytes=64MiB", "ucx.listen=0.0.0.0:0"};
  auto daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const int grpc_port = PortOf((*daemon)->address());
  const int ucx_port = PortOf((*daemon)->ucx_address());
  absl::StatusOr<HttpResponse> listeners = HttpGet((*daemon)->ready().metrics, "/listeners");
  ASSERT_TRUE(listeners.ok()) << listeners.status();
  EXPECT_EQ(listeners->body,
            absl::StrCat("grpc=0.0.0.0:", grpc_port, "\nucx=0.0.0.0:", ucx_port, "\n"));
  ClientOptions client;
  client.connect_timeout_ms = 60000;
  const std::string metrics_port = absl::StrCat(PortOf((*daemon)->ready().metrics));
  absl::Status s = Client::Connect("ucx://localhost:" + metrics_port, client).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("(ucx://localhost:", ucx_port, ")")));
}

// Plaintext clients at a TLS listener are told to use grpcs://, by the gRPC port itself and
// by the metrics endpoint, which names the listener with its scheme.
TEST(WrongListenerTlsTest, PlaintextAtATlsDaemonSaysGrpcs) {
  const std::string certs =
      absl::StrCat(::testing::TempDir(), "/kvstash-wrong-listener-", getpid(), "-certs");
  std::filesystem::remove_all(certs);
  ASSERT_TRUE(testing::MakeTestCertificates(certs).ok());
  DaemonOptions options;
  options.set = {"storage.dram.capacity_bytes=64MiB",
                 "server.tls.cert_file=" + certs + "/server.crt",
                 "server.tls.key_file=" + certs + "/server.key"};
  auto daemon = DaemonProcess::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ClientOptions client;
  client.connect_timeout_ms = 60000;
  client.max_retries = 0;
  for (const char* scheme : {"grpc", "ucx"}) {
    absl::Status s =
        Client::Connect(absl::StrCat(scheme, "://", (*daemon)->address()), client).status();
    EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("is a TLS server, not kvstashd's ",
                                                    scheme == std::string("ucx") ? "UCX" : "gRPC",
                                                    " listener; if it is kvstashd's gRPC listener "
                                                    "with server.tls, use grpcs://",
                                                    (*daemon)->address())));
  }
  absl::Status s = Client::Connect("grpc://" + (*daemon)->ready().metrics, client).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("not its gRPC listener (grpcs://127.0.0.1:",
                                                  PortOf((*daemon)->address()), ")")));
  std::filesystem::remove_all(certs);
}

}  // namespace
}  // namespace kvstash
