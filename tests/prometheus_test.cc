// The real Prometheus server (Debian package `prometheus`) scrapes a real kvstashd every
// second while a client drives a steady, paced load; the test then asks Prometheus' query
// API for the series and evaluates the Grafana dashboard's own hit-ratio, lookup and
// throughput expressions, comparing them with what the load implies. Skipped (with the
// reason) when Prometheus is not installed or does not start.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "server/metrics/http_server.h"
#include "testing/http_get.h"
#include "tests/daemon_fixture.h"
#include "tests/daemon_process.h"
#include "tests/metrics_test_util.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"

namespace kvstash::testing {
namespace {

constexpr size_t kChunkBytes = 64 * kKiB;
constexpr uint32_t kChunkTokens = 16;
constexpr int kRoundsPerSecond = 40;
constexpr absl::Duration kLoad = absl::Seconds(9);
constexpr char kWindow[] = "4s";  // stands in for Grafana's $__rate_interval
constexpr double kWindowSeconds = 4;
// rate() over a 4 s window extrapolates from the 3-4 scrapes inside it; on a loaded 2-core
// host (sanitizer builds) late scrapes shift it by up to half. The exact totals are checked
// on the counters themselves; the rates only have to match in magnitude.
constexpr double kRateTolerance = 0.6;

// A port that was free a moment ago (Prometheus cannot report a port 0 choice).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string FindPrometheus() {
  for (const char* p : {"/usr/bin/prometheus", "/usr/local/bin/prometheus"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

class PrometheusTest : public DaemonFixture {
 protected:
  void SetUp() override {
    const std::string binary = FindPrometheus();
    if (binary.empty()) GTEST_SKIP() << "prometheus is not installed (apt-get install prometheus)";
    DaemonFixtureOptions options;
    options.set = {"ucx.enabled=false"};  // gRPC traffic only: one series per transport query
    options.connect = false;              // the test connects once Prometheus scrapes
    ASSERT_NO_FATAL_FAILURE(StartDaemon(options));
    auto metrics = MetricsAddress(*daemon_);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    const std::string config = daemon_->dir() + "/prometheus.yml";
    std::ofstream(config) << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                          << "scrape_configs:\n  - job_name: kvstash\n    static_configs:\n"
                          << "      - targets: ['" << *metrics << "']\n";
    prom_address_ = absl::StrCat("127.0.0.1:", FreePort());
    auto prom = Subprocess::Start({binary, "--config.file=" + config,
                                   "--storage.tsdb.path=" + daemon_->dir() + "/tsdb",
                                   "--web.listen-address=" + prom_address_, "--log.level=warn"});
    ASSERT_TRUE(prom.ok()) << prom.status();
    prometheus_ = std::move(*prom);
    const bool up = PollUntil(
        [&] {
          auto r = HttpGet(prom_address_, "/-/ready", 1000);
          return r.ok() && r->status == 200;
        },
        absl::Seconds(30), absl::Milliseconds(200));
    if (!up) GTEST_SKIP() << "prometheus did not start: " << prometheus_->output();
  }

  // Paced rounds, each: one Get of a present and an absent key (hit ratio 1/2), and one
  // Lookup of 4 keys whose first 2 are present (2 hit chunks, 2 * kChunkTokens tokens).
  void RunLoad(Client& client, NamespaceHandle ns, const Key128& present) {
    std::mt19937_64 rng(7);
    const Key128 absent = RandomKey(rng);
    const Key128 lookup[4] = {present, present, absent, absent};
    std::vector<uint8_t> a(kChunkBytes), b(kChunkBytes);
    const absl::Time start = absl::Now();
    for (int64_t i = 0; absl::Now() - start < kLoad; ++i) {
      GetItem items[2];
      items[0] = {present, a.data(), a.size()};
      items[1] = {absent, b.data(), b.size()};
      ASSERT_TRUE(client.Get(ns, absl::MakeSpan(items)).ok());
      ASSERT_TRUE(client.Lookup(ns, lookup).ok());
      rounds_done_.push_back(absl::Now());
      const absl::Time next = start + i * absl::Seconds(1) / kRoundsPerSecond;
      absl::SleepFor(next - absl::Now());
    }
  }

  // Rounds per second the load actually achieved in the rate window ending at `at` (a busy
  // machine may fall behind kRoundsPerSecond; the expected values follow the real traffic).
  double AchievedRoundsPerSecond(double at) const {
    const absl::Time end = absl::UnixEpoch() + absl::Seconds(at);
    const absl::Time begin = end - absl::Seconds(kWindowSeconds);
    int n = 0;
    for (absl::Time t : rounds_done_) n += (t > begin && t <= end) ? 1 : 0;
    return n / kWindowSeconds;
  }

  // Sum of every sample of `name` (any labels) in exposition text.
  static double SumOfSeries(const std::string& text, const std::string& name) {
    double sum = 0;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (!absl::StartsWith(line, name) || line.size() <= name.size()) continue;
      if (line[name.size()] != ' ' && line[name.size()] != '{') continue;
      sum += std::strtod(line.substr(line.rfind(' ') + 1).c_str(), nullptr);
    }
    return sum;
  }

  double Value(const std::string& promql, double at) {
    auto r = PromQuery(prom_address_, promql, at);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r.ok() && r->size() == 1) << promql << " gave " << (r.ok() ? r->size() : 0);
    return r.ok() && !r->empty() ? (*r)[0].value : -1;
  }

  std::vector<absl::Time> rounds_done_;
  std::unique_ptr<Subprocess> prometheus_;
  std::string prom_address_;
};

TEST_F(PrometheusTest, DashboardQueriesMatchTheTraffic) {
  auto client = ConnectClient(daemon_->uri());
  ASSERT_TRUE(client.ok()) << client.status();
  auto ns = (*client)->OpenNamespace(TestNamespace("prometheus", kChunkTokens));
  ASSERT_TRUE(ns.ok()) << ns.status();
  std::mt19937_64 rng(1);
  Payload p{RandomKey(rng), RandomBytes(rng, kChunkBytes), kChunkTokens, 0};
  ASSERT_TRUE(PutAll(**client, *ns, {p}).ok());
  RunLoad(**client, *ns, p.key);
  // Evaluate inside the steady part: the window [at - 4s, at] lies within the load.
  const double at = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()) - 1.5;
  ASSERT_TRUE(PollUntil(
      [&] {
        auto r = PromQuery(prom_address_, "timestamp(kvstash_build_info)", at + 3);
        return r.ok() && r->size() == 1 && (*r)[0].value > at + 0.5;
      },
      absl::Seconds(20), absl::Milliseconds(250)))
      << "prometheus has no scrape after the load";

  // Every series of a direct scrape exists in Prometheus.
  auto text = Scrape(*MetricsAddress(*daemon_));
  ASSERT_TRUE(text.ok()) << text.status();
  // The counter itself is exact: two hit chunks of kChunkTokens per round.
  EXPECT_EQ(SumOfSeries(*text, "kvstash_lookup_hit_tokens_total"),
            static_cast<double>(rounds_done_.size() * 2 * kChunkTokens));
  auto names = PromQuery(prom_address_, "count by (__name__) ({__name__=~\"kvstash_.+\"})", at);
  ASSERT_TRUE(names.ok()) << names.status();
  std::string stored;
  for (const QuerySample& s : *names) stored += s.metric;
  for (const char* name :
       {"kvstash_gets_total", "kvstash_op_duration_seconds_bucket", "kvstash_tier_bytes",
        "kvstash_transport_sent_bytes_total", "kvstash_lookup_hit_tokens_total", "kvstash_ready"}) {
    EXPECT_TRUE(absl::StrContains(stored, absl::StrCat("\"", name, "\""))) << name;
  }

  auto queries =
      DashboardQueries(std::string(KVSTASH_SOURCE_DIR) + "/deploy/grafana/kvstash-dashboard.json");
  if (absl::IsUnavailable(queries.status())) GTEST_SKIP() << queries.status();
  ASSERT_TRUE(queries.ok()) << queries.status();
  int checked = 0;
  for (const PanelQuery& q : *queries) {
    const std::string expr = Instantiate(q.expr, kWindow);
    if (q.title == "Get hit ratio by tier") {
      auto r = PromQuery(prom_address_, expr, at);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->size(), 1u) << expr;  // only DRAM served hits
      EXPECT_TRUE(absl::StrContains((*r)[0].metric, "\"tier\":\"dram\""));
      EXPECT_NEAR((*r)[0].value, 0.5, 0.05) << expr;
      ++checked;
    } else if (absl::StrContains(expr, "kvstash_lookup_hit_chunks_total")) {
      EXPECT_NEAR(Value(expr, at), 0.5, 0.05) << expr;
      ++checked;
    } else if (absl::StrContains(expr, "kvstash_lookup_hit_tokens_total")) {
      const double want = AchievedRoundsPerSecond(at) * 2.0 * kChunkTokens;
      EXPECT_NEAR(Value(expr, at), want, want * kRateTolerance) << expr;
      ++checked;
    } else if (absl::StrContains(expr, "kvstash_transport_sent_bytes_total")) {
      const double want = AchievedRoundsPerSecond(at) * double{kChunkBytes};  // 1 hit/round
      EXPECT_NEAR(Value(expr, at), want, want * kRateTolerance) << expr;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4) << "the dashboard lost a panel this test evaluates";
}

}  // namespace
}  // namespace kvstash::testing
