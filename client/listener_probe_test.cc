#include "client/listener_probe.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvstash::client_internal {
namespace {

using ::testing::HasSubstr;

constexpr char kListeners[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\ngrpc=127.0.0.1:7070\nucx=127.0.0.1:7072\n";

TEST(DescribeReplyTest, MetricsEndpointNamesTheListenerTheUriMeant) {
  ListenerDescription ucx = DescribeReply("127.0.0.1:7071", UriScheme::kUcx, kListeners);
  EXPECT_TRUE(ucx.wrong_service);
  EXPECT_EQ(ucx.what,
            "127.0.0.1:7071 is kvstashd's metrics endpoint, not its UCX listener "
            "(ucx://127.0.0.1:7072)");
  ListenerDescription grpc = DescribeReply("127.0.0.1:7071", UriScheme::kGrpc, kListeners);
  EXPECT_THAT(grpc.what, HasSubstr("not its gRPC listener (grpc://127.0.0.1:7070)"));
}

TEST(DescribeReplyTest, MetricsEndpointOfADaemonWithoutUcx) {
  ListenerDescription d =
      DescribeReply("h:1", UriScheme::kUcx, "HTTP/1.1 200 OK\r\n\r\ngrpc=h:7070\n");
  EXPECT_THAT(d.what, HasSubstr("serves no UCX: ucx.enabled is false; grpc://h:7070"));
}

TEST(DescribeReplyTest, OtherHttpServers) {
  ListenerDescription d =
      DescribeReply("h:80", UriScheme::kGrpc, "HTTP/1.0 404 Not Found\r\n\r\nx");
  EXPECT_TRUE(d.wrong_service);
  EXPECT_EQ(d.what, "h:80 is an HTTP server (HTTP status 404), not kvstashd's gRPC listener");
  // A 200 whose body is not a listener list is somebody else's page.
  EXPECT_THAT(DescribeReply("h:80", UriScheme::kUcx, "HTTP/1.1 200 OK\r\n\r\n<html>").what,
              HasSubstr("is an HTTP server (HTTP status 200)"));
}

TEST(DescribeReplyTest, Http2FramesAreAGrpcServer) {
  const std::string settings("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9);
  ListenerDescription d = DescribeReply("h:7070", UriScheme::kUcx, settings);
  EXPECT_TRUE(d.wrong_service);
  EXPECT_THAT(d.what, HasSubstr("HTTP/2 (gRPC) server, not kvstashd's UCX listener; if it is "
                                "kvstashd's gRPC listener, use grpc://h:7070"));
  // To a gRPC URI a gRPC server is what was asked for (kvstashd, slow to answer, or not:
  // its Health call tells).
  ListenerDescription grpc = DescribeReply("h:7070", UriScheme::kGrpc, settings);
  EXPECT_FALSE(grpc.wrong_service);
  EXPECT_EQ(grpc.what, "");
}

TEST(DescribeReplyTest, TlsIsAHintToGrpcAndWrongToUcx) {
  const std::string alert("\x15\x03\x01\x00\x02\x02\x46", 7);
  ListenerDescription grpc = DescribeReply("h:7070", UriScheme::kGrpc, alert);
  EXPECT_FALSE(grpc.wrong_service);
  EXPECT_THAT(grpc.what, HasSubstr("answers with TLS (a kvstashd with server.tls takes grpcs://"));
  ListenerDescription ucx = DescribeReply("h:7070", UriScheme::kUcx, alert);
  EXPECT_TRUE(ucx.wrong_service);
  EXPECT_THAT(ucx.what, HasSubstr("is a TLS server, not kvstashd's UCX listener"));
}

TEST(DescribeReplyTest, SilenceIsOnlyAHint) {
  ListenerDescription grpc = DescribeReply("h:7072", UriScheme::kGrpc, "");
  EXPECT_FALSE(grpc.wrong_service);
  EXPECT_THAT(grpc.what, HasSubstr("use ucx://h:7072"));
  ListenerDescription ucx = DescribeReply("h:7072", UriScheme::kUcx, "");
  EXPECT_FALSE(ucx.wrong_service);
  EXPECT_EQ(ucx.what, "");
}

TEST(DescribeReplyTest, AnythingElseIsQuotedPrintably) {
  ListenerDescription d = DescribeReply("h:22", UriScheme::kUcx, "SSH-2.0-OpenSSH_9.2\r\n");
  EXPECT_TRUE(d.wrong_service);
  EXPECT_EQ(d.what, "h:22 answered \"SSH-2.0-OpenSSH_9.2..\", not kvstashd's UCX listener");
}

}  // namespace
}  // namespace kvstash::client_internal
