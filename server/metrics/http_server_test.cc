#include "server/metrics/http_server.h"

#include <atomic>

#include "gtest/gtest.h"
#include "testing/http_get.h"

namespace kvstash::metrics {
namespace {

class HttpEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpHandlers h;
    h.metrics = [] { return std::string("# HELP x y\n# TYPE x gauge\nx 1\n"); };
    h.ready = [this] { return ready_.load(); };
    auto endpoint = HttpEndpoint::Start({"127.0.0.1:0"}, h);
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    endpoint_ = std::move(*endpoint);
    ASSERT_GT(endpoint_->port(), 0);
  }

  HttpResponse Get(const std::string& path) {
    absl::StatusOr<HttpResponse> r = HttpGet(endpoint_->connect_address(), path);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : HttpResponse{};
  }

  std::atomic<bool> ready_{false};
  std::unique_ptr<HttpEndpoint> endpoint_;
};

TEST_F(HttpEndpointTest, ServesMetricsAndProbes) {
  HttpResponse m = Get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.body, "# HELP x y\n# TYPE x gauge\nx 1\n");
  EXPECT_EQ(Get("/healthz").status, 200);
  EXPECT_EQ(Get("/readyz").status, 503);
  ready_ = true;
  EXPECT_EQ(Get("/readyz").status, 200);
  EXPECT_EQ(Get("/nothing").status, 404);
}

TEST_F(HttpEndpointTest, SecondListenerOnTheSamePortFails) {
  const std::string taken = "127.0.0.1:" + std::to_string(endpoint_->port());
  auto second = HttpEndpoint::Start({taken}, HttpHandlers{});
  EXPECT_FALSE(second.ok());
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
}

TEST(HttpGetTest, RefusedConnectionIsUnavailable) {
  // Port 1 on loopback is closed on any sane test host.
  absl::StatusOr<HttpResponse> r = HttpGet("127.0.0.1:1", "/metrics", 1000);
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
}

}  // namespace
}  // namespace kvstash::metrics
