#include "server/metrics/bearer_token_file.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "server/metrics/http_server.h"
#include "testing/http_get.h"

namespace kvstash::metrics {
namespace {

std::string WriteToken(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  std::rename(tmp.c_str(), path.c_str());  // as a rotation would: atomically
  return path;
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", ""));
}

TEST(BearerTokenFileTest, AcceptsOnlyTheFilesTokenAndFollowsRotation) {
  const std::string path = WriteToken("metrics-token", "  s3cret-1\n");
  auto file = BearerTokenFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  BearerTokenFile& f = **file;
  EXPECT_TRUE(f.Accepts("Bearer s3cret-1"));
  EXPECT_TRUE(f.Accepts("bearer   s3cret-1 "));
  EXPECT_FALSE(f.Accepts(nullptr));
  EXPECT_FALSE(f.Accepts(""));
  EXPECT_FALSE(f.Accepts("s3cret-1"));
  EXPECT_FALSE(f.Accepts("Basic s3cret-1"));
  EXPECT_FALSE(f.Accepts("Bearer s3cret-2"));
  EXPECT_FALSE(f.Accepts("Bearer s3cret-1x"));
  WriteToken("metrics-token", "s3cret-22\n");
  EXPECT_TRUE(f.Accepts("Bearer s3cret-22"));
  EXPECT_FALSE(f.Accepts("Bearer s3cret-1"));
  // An emptied file keeps the last token rather than opening the endpoint.
  WriteToken("metrics-token", "\n");
  EXPECT_FALSE(f.Accepts("Bearer "));
  EXPECT_TRUE(f.Accepts("Bearer s3cret-22"));
}

TEST(BearerTokenFileTest, MissingOrEmptyFileIsAnError) {
  auto missing = BearerTokenFile::Open(::testing::TempDir() + "/no-such-token");
  EXPECT_TRUE(absl::IsInvalidArgument(missing.status())) << missing.status();
  EXPECT_NE(missing.status().message().find("metrics.bearer_token_file"), std::string::npos);
  auto empty = BearerTokenFile::Open(WriteToken("empty-token", " \n"));
  EXPECT_TRUE(absl::IsInvalidArgument(empty.status())) << empty.status();
}

TEST(BearerTokenFileTest, EndpointRequiresTheTokenForMetricsOnly) {
  HttpHandlers h;
  h.metrics = [] { return std::string("x 1\n"); };
  h.ready = [] { return true; };
  HttpEndpointOptions options{"127.0.0.1:0"};
  options.bearer_token_file = WriteToken("endpoint-token", "tok\n");
  auto endpoint = HttpEndpoint::Start(options, h);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const std::string address = (*endpoint)->connect_address();
  auto get = [&](const std::string& path, const std::string& headers) {
    absl::StatusOr<HttpResponse> r = HttpGet(address, path, 5000, headers);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : HttpResponse{};
  };
  EXPECT_EQ(get("/metrics", "").status, 401);
  EXPECT_EQ(get("/metrics", "Authorization: Bearer nope\r\n").status, 401);
  HttpResponse ok = get("/metrics", "Authorization: Bearer tok\r\n");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "x 1\n");
  EXPECT_EQ(get("/healthz", "").status, 200);
  EXPECT_EQ(get("/readyz", "").status, 200);
}

}  // namespace
}  // namespace kvstash::metrics
