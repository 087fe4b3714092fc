#include "client/listener_probe.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvstash::client_internal {
namespace {

using ::testing::HasSubstr;

ProbeTarget Target(const std::string& host, int port, UriScheme scheme, bool tls = false) {
  return ProbeTarget{host, port, scheme, tls};
}

ListenerDescription Describe(const ProbeTarget& t, const std::string& bytes, bool closed = false) {
  return DescribeReply(t, ProbeReply{bytes, closed});
}

constexpr char kListeners[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\ngrpc=127.0.0.1:7070\nucx=127.0.0.1:7072\n";

TEST(DescribeReplyTest, MetricsEndpointNamesTheListenerTheUriMeant) {
  ListenerDescription ucx = Describe(Target("127.0.0.1", 7071, UriScheme::kUcx), kListeners);
  EXPECT_TRUE(ucx.wrong_service);
  EXPECT_EQ(ucx.what,
            "127.0.0.1:7071 is kvstashd's metrics endpoint, not its UCX listener "
            "(ucx://127.0.0.1:7072)");
  ListenerDescription grpc = Describe(Target("127.0.0.1", 7071, UriScheme::kGrpc), kListeners);
  EXPECT_THAT(grpc.what, HasSubstr("not its gRPC listener (grpc://127.0.0.1:7070)"));
}

TEST(DescribeReplyTest, MetricsEndpointOfADaemonWithoutUcx) {
  ListenerDescription d =
      Describe(Target("h", 1, UriScheme::kUcx), "HTTP/1.1 200 OK\r\n\r\ngrpc=h:7070\n");
  EXPECT_THAT(d.what, HasSubstr("serves no UCX: ucx.enabled is false; grpc://h:7070"));
}

TEST(DescribeReplyTest, OtherHttpServers) {
  ListenerDescription d =
      Describe(Target("h", 80, UriScheme::kGrpc), "HTTP/1.0 404 Not Found\r\n\r\nx");
  EXPECT_TRUE(d.wrong_service);
  EXPECT_EQ(d.what, "h:80 is an HTTP server (HTTP status 404), not kvstashd's gRPC listener");
  // A 200 whose body is not a listener list is somebody else's page.
  EXPECT_THAT(Describe(Target("h", 80, UriScheme::kUcx), "HTTP/1.1 200 OK\r\n\r\n<html>").what,
              HasSubstr("is an HTTP server (HTTP status 200)"));
}

TEST(DescribeReplyTest, Http2FramesAreAGrpcServer) {
  const std::string settings("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  ListenerDescription d = Describe(Target("h", 7070, UriScheme::kUcx), settings);
  EXPECT_TRUE(d.wrong_service);
  EXPECT_THAT(d.what, HasSubstr("HTTP/2 (gRPC) server, not kvstashd's UCX listener; if it is "
                                "kvstashd's gRPC listener, use grpc://h:7070"));
  // To a gRPC URI a gRPC server is what was asked for (kvstashd, slow to answer, or not:
  // its Health call tells).
  ListenerDescription grpc = Describe(Target("h", 7070, UriScheme::kGrpc), settings);
  EXPECT_FALSE(grpc.wrong_service);
  EXPECT_EQ(grpc.what, "");
}

TEST(DescribeReplyTest, TlsIsWrongToPlaintextClients) {
  const std::string alert("\x15\x03\x01\x00\x02\x02\x46", 7);
  ListenerDescription grpc = Describe(Target("h", 7070, UriScheme::kGrpc), alert);
  EXPECT_TRUE(grpc.wrong_service);
  EXPECT_EQ(grpc.what,
            "h:7070 is a TLS server, not kvstashd's gRPC listener; if it is kvstashd's gRPC "
            "listener with server.tls, use grpcs://h:7070");
  ListenerDescription ucx = Describe(Target("h", 7070, UriScheme::kUcx), alert);
  EXPECT_TRUE(ucx.wrong_service);
  EXPECT_THAT(ucx.what, HasSubstr("is a TLS server, not kvstashd's UCX listener"));
  // A TLS client's handshake error says more than the probe can.
  ListenerDescription tls = Describe(Target("h", 7070, UriScheme::kGrpc, true), alert);
  EXPECT_FALSE(tls.wrong_service);
  EXPECT_EQ(tls.what, "");
}

TEST(DescribeReplyTest, ATlsRecordWhoseLengthLooksLikeAnHttp2FrameIsTls) {
  const std::string server_hello("\x16\x03\x03\x07\x00\x02\x00\x06\xfc", 9);
  ListenerDescription d = Describe(Target("h", 7070, UriScheme::kGrpc, true), server_hello);
  EXPECT_FALSE(d.wrong_service);
  EXPECT_EQ(d.what, "");
}

TEST(DescribeReplyTest, PlaintextHttp2IsWrongToTlsClients) {
  const std::string settings("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  ListenerDescription d = Describe(Target("h", 7070, UriScheme::kGrpc, true), settings);
  EXPECT_TRUE(d.wrong_service);
  EXPECT_THAT(d.what, HasSubstr("plaintext HTTP/2 (gRPC) server; if it is kvstashd's gRPC "
                                "listener, use grpc://h:7070 without the TLS options"));
}

TEST(DescribeReplyTest, WildcardListenersAreNamedByTheHostReached) {
  const std::string body =
      "HTTP/1.1 200 OK\r\n\r\ngrpc=0.0.0.0:7070\nucx=[::]:7072\ngrpc_tls=true\n";
  EXPECT_THAT(Describe(Target("node-3", 7071, UriScheme::kUcx), body).what,
              HasSubstr("(ucx://node-3:7072)"));
  EXPECT_THAT(Describe(Target("fd00::3", 7071, UriScheme::kGrpc), body).what,
              HasSubstr("not its gRPC listener (grpcs://[fd00::3]:7070)"));
  // A listener bound to one address is named as bound.
  EXPECT_THAT(Describe(Target("node-3", 7071, UriScheme::kUcx), kListeners).what,
              HasSubstr("(ucx://127.0.0.1:7072)"));
}

TEST(DescribeReplyTest, SilenceIsOnlyAHint) {
  ListenerDescription grpc = Describe(Target("h", 7072, UriScheme::kGrpc), "");
  EXPECT_FALSE(grpc.wrong_service);
  EXPECT_THAT(grpc.what, HasSubstr("use ucx://h:7072"));
  ListenerDescription ucx = Describe(Target("h", 7072, UriScheme::kUcx), "");
  EXPECT_FALSE(ucx.wrong_service);
  EXPECT_EQ(ucx.what, "");
  ListenerDescription closed = Describe(Target("h", 7072, UriScheme::kGrpc), "", true);
  EXPECT_FALSE(closed.wrong_service);
  EXPECT_THAT(closed.what, HasSubstr("closes connections without answering"));
}

TEST(DescribeReplyTest, AnythingElseIsQuotedPrintably) {
  ListenerDescription d = Describe(Target("h", 22, UriScheme::kUcx), "SSH-2.0-OpenSSH_9.2\r\n");
  EXPECT_TRUE(d.wrong_service);
  EXPECT_EQ(d.what, "h:22 answered \"SSH-2.0-OpenSSH_9.2..\", not kvstashd's UCX listener");
}

}  // namespace
}  // namespace kvstash::client_internal
