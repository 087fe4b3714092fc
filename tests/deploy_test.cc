// The deploy/ files against a real kvstashd: the metrics endpoint and probes, the
// Kubernetes manifests and Grafana dashboard (they parse and name only exported metrics),
// the systemd unit (systemd-analyze verify), the hardened config and the engine pod
// example's path to the daemon's socket; config_docs_test holds the default config file to
// the schema.
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/byte_size.h"
#include "gtest/gtest.h"
#include "server/config.h"
#include "server/config_file.h"
#include "testing/http_get.h"
#include "tests/daemon_process.h"
#include "tests/metrics_test_util.h"
#include "tests/subprocess.h"

namespace kvstash::testing {
namespace {

const std::string kDeploy = std::string(KVSTASH_SOURCE_DIR) + "/deploy/";

class DeployTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    DaemonOptions options;
    options.set = {"storage.dram.capacity_bytes=64MiB", "metrics.namespace_labels=true"};
    auto daemon = DaemonProcess::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = daemon->release();
    auto address = MetricsAddress(*daemon_);
    ASSERT_TRUE(address.ok()) << address.status();
    address_ = new std::string(*address);
    auto text = Scrape(*address_);
    ASSERT_TRUE(text.ok()) << text.status();
    exported_ = new std::set<std::string>(ExportedNames(*text));
  }
  static void TearDownTestSuite() {
    delete daemon_;
    delete address_;
    delete exported_;
  }

  // Every kvstash_* name in `text` is one the daemon exports.
  static void ExpectOnlyExportedNames(const std::string& file, const std::string& text) {
    ASSERT_NE(exported_, nullptr);
    for (const std::string& name : MetricTokens(text)) {
      EXPECT_TRUE(exported_->count(name))
          << file << " references " << name << ", which kvstashd does not export";
    }
  }

  static DaemonProcess* daemon_;
  static std::string* address_;
  static std::set<std::string>* exported_;
};
DaemonProcess* DeployTest::daemon_ = nullptr;
std::string* DeployTest::address_ = nullptr;
std::set<std::string>* DeployTest::exported_ = nullptr;

TEST_F(DeployTest, EndpointServesMetricsAndProbes) {
  ASSERT_NE(address_, nullptr);
  for (const char* name :
       {"kvstash_gets_total", "kvstash_tier_capacity_bytes", "kvstash_op_duration_seconds_bucket",
        "kvstash_errors_total", "kvstash_transport_sent_bytes_total", "kvstash_active_calls",
        "kvstash_lookup_hit_tokens_total", "kvstash_namespace_bytes"}) {
    EXPECT_TRUE(exported_->count(name)) << name;
  }
  auto healthz = HttpGet(*address_, "/healthz");
  ASSERT_TRUE(healthz.ok()) << healthz.status();
  EXPECT_EQ(healthz->status, 200);
  auto readyz = HttpGet(*address_, "/readyz");
  ASSERT_TRUE(readyz.ok()) << readyz.status();
  EXPECT_EQ(readyz->status, 200);
}

TEST_F(DeployTest, KubernetesManifestsParseAndNameExportedMetrics) {
  const std::string path = kDeploy + "k8s/kvstash.yaml";
  const std::string text = ReadFile(path);
  ASSERT_FALSE(text.empty()) << path;
  std::set<std::string> kinds;
  for (const YAML::Node& doc : YAML::LoadAll(text)) {
    kinds.insert(doc["kind"].as<std::string>());
    if (doc["kind"].as<std::string>() != "ConfigMap") continue;
    // The embedded daemon config must pass the daemon's own strict parser.
    const std::string config = doc["data"]["kvstashd.yaml"].as<std::string>();
    auto parsed = server::ParseConfig(config, {});
    EXPECT_TRUE(parsed.ok()) << parsed.status();
  }
  for (const char* kind : {"DaemonSet", "Service", "ConfigMap", "ServiceMonitor"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind;
  }
  ExpectOnlyExportedNames(path, text);
}

TEST_F(DeployTest, DashboardParsesAndQueriesExportedMetrics) {
  const std::string path = kDeploy + "grafana/kvstash-dashboard.json";
  auto queries = DashboardQueries(path);
  if (absl::IsUnavailable(queries.status())) GTEST_SKIP() << queries.status();
  ASSERT_TRUE(queries.ok()) << queries.status();
  EXPECT_GE(queries->size(), 8u);
  for (const PanelQuery& q : *queries) {
    EXPECT_FALSE(MetricTokens(q.expr).empty()) << q.title << ": " << q.expr;
  }
  ExpectOnlyExportedNames(path, ReadFile(path));
}

TEST_F(DeployTest, ClusterManifestsConfigureEachDaemonAsAMember) {
  const std::string path = kDeploy + "k8s/kvstash-cluster.yaml";
  const std::string text = ReadFile(path);
  ASSERT_FALSE(text.empty()) << path;
  std::string daemon_config;
  std::map<std::string, std::string> cluster_map;  // the kvstash-cluster ConfigMap
  YAML::Node container;
  for (const YAML::Node& doc : YAML::LoadAll(text)) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "ConfigMap" && doc["data"]["kvstashd.yaml"]) {
      daemon_config = doc["data"]["kvstashd.yaml"].as<std::string>();
    } else if (kind == "ConfigMap") {
      cluster_map = doc["data"].as<std::map<std::string, std::string>>();
    } else if (kind == "DaemonSet") {
      container = doc["spec"]["template"]["spec"]["containers"][0];
    }
  }
  ASSERT_TRUE(container.IsDefined());
  // The environment the DaemonSet gives the daemon, as Kubernetes would fill it in.
  std::map<std::string, std::string> env = {{"NODE_NAME", "gpu-node-7"}, {"HOST_IP", "10.1.2.3"}};
  for (const YAML::Node& e : container["env"]) {
    const YAML::Node from = e["valueFrom"];
    if (from["configMapKeyRef"]) {
      const std::string key = from["configMapKeyRef"]["key"].as<std::string>();
      ASSERT_TRUE(cluster_map.count(key)) << key;
      env[e["name"].as<std::string>()] = cluster_map[key];
    } else {
      EXPECT_TRUE(from["fieldRef"]) << e["name"].as<std::string>();
    }
  }
  std::vector<server::ConfigOverride> overrides;
  const std::vector<std::string> args = container["args"].as<std::vector<std::string>>();
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--set") continue;
    std::string value = args[i + 1];
    for (const auto& [name, v] : env) {
      value = absl::StrReplaceAll(value, {{absl::StrCat("$(", name, ")"), v}});
    }
    ASSERT_EQ(value.find("$("), std::string::npos) << "unset variable in " << args[i + 1];
    const size_t eq = value.find('=');
    overrides.push_back({value.substr(0, eq), value.substr(eq + 1)});
  }
  auto c = server::ParseConfig(daemon_config, overrides);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->cluster.enabled);
  EXPECT_EQ(c->cluster.member_id, "gpu-node-7");
  EXPECT_EQ(c->cluster.advertise_grpc, "10.1.2.3:7070");
  EXPECT_EQ(c->cluster.etcd_endpoints, cluster_map["etcd_endpoints"]);
  ExpectOnlyExportedNames(path, text);

  // The etcd the endpoints name: three members behind the headless Service "etcd".
  std::set<std::string> kinds;
  for (const YAML::Node& doc : YAML::LoadAll(ReadFile(kDeploy + "k8s/etcd.yaml"))) {
    kinds.insert(doc["kind"].as<std::string>());
    if (doc["kind"].as<std::string>() == "StatefulSet") {
      EXPECT_EQ(doc["spec"]["serviceName"].as<std::string>(), "etcd");
      EXPECT_EQ(doc["spec"]["replicas"].as<int>(), 3);
    }
  }
  EXPECT_TRUE(kinds.count("StatefulSet") && kinds.count("Service"));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(c->cluster.etcd_endpoints.find(absl::StrCat("etcd-", i, ".etcd.kvstash.svc:2379")),
              std::string::npos);
  }
}

TEST(DeployFilesTest, HardenedConfigProtectsEveryListener) {
  auto c = server::LoadConfigFile(kDeploy + "kvstashd-hardened.yaml", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->server.tls.enabled());
  EXPECT_FALSE(c->server.tls.client_ca_file.empty());
  EXPECT_FALSE(c->metrics.bearer_token_file.empty());
  EXPECT_FALSE(c->ucx.direct_access);
  EXPECT_TRUE(c->auth.required);
  // The unit runs it, with every file it names handed over by LoadCredential=.
  const std::string unit = ReadFile(kDeploy + "kvstashd.service");
  EXPECT_NE(unit.find("--config /etc/kvstash/kvstashd-hardened.yaml"), std::string::npos);
  for (const std::string* file :
       {&c->server.tls.cert_file, &c->server.tls.key_file, &c->server.tls.client_ca_file,
        &c->metrics.bearer_token_file, &c->auth.token_file}) {
    const std::string name = file->substr(file->rfind('/') + 1);
    EXPECT_EQ(*file, "/run/credentials/kvstashd.service/" + name);
    EXPECT_NE(unit.find("LoadCredential=" + name + ":/etc/kvstash/secrets/" + name),
              std::string::npos)
        << name;
  }
}

TEST(DeployFilesTest, KubernetesMountsSecretsAndPrometheusSendsTheToken) {
  std::set<std::string> secret_paths;
  for (const YAML::Node& doc : YAML::LoadAll(ReadFile(kDeploy + "k8s/kvstash.yaml"))) {
    const std::string kind = doc["kind"].as<std::string>();
    EXPECT_NE(kind, "Secret") << "secrets are created apart from the manifest";
    if (kind == "DaemonSet") {
      for (const YAML::Node& m : doc["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]) {
        if (absl::StartsWith(m["mountPath"].as<std::string>(), "/run/secrets/")) {
          secret_paths.insert(m["mountPath"].as<std::string>() + "/");
        }
      }
    } else if (kind == "ConfigMap") {
      auto c = server::ParseConfig(doc["data"]["kvstashd.yaml"].as<std::string>(), {});
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_TRUE(c->server.tls.enabled());
      EXPECT_FALSE(c->metrics.bearer_token_file.empty());
      EXPECT_TRUE(server::CheckUcxTrust(c->ucx, /*auth_required=*/true).ok());
    } else if (kind == "ServiceMonitor") {
      const YAML::Node auth = doc["spec"]["endpoints"][0]["authorization"];
      EXPECT_EQ(auth["type"].as<std::string>(""), "Bearer");
      EXPECT_EQ(auth["credentials"]["key"].as<std::string>(""), "metrics-token");
    }
  }
  EXPECT_EQ(secret_paths.size(), 2u);
  const YAML::Node prometheus = YAML::LoadFile(kDeploy + "prometheus.yml");
  const YAML::Node auth = prometheus["scrape_configs"][0]["authorization"];
  EXPECT_EQ(auth["type"].as<std::string>(""), "Bearer");
  EXPECT_FALSE(auth["credentials_file"].as<std::string>("").empty());
}

// The hostPath a pod spec mounts at `mount_path` in its first container ("" when none).
std::string HostPathMountedAt(const YAML::Node& pod_spec, const std::string& mount_path) {
  for (const YAML::Node& m : pod_spec["containers"][0]["volumeMounts"]) {
    if (m["mountPath"].as<std::string>() != mount_path) continue;
    for (const YAML::Node& v : pod_spec["volumes"]) {
      if (v["name"].as<std::string>() == m["name"].as<std::string>() && v["hostPath"]) {
        return v["hostPath"]["path"].as<std::string>();
      }
    }
  }
  return "";
}

TEST(DeployFilesTest, EnginePodReachesTheDaemonsLocalSocket) {
  std::string socket, daemon_host_path;
  uint64_t arena_bytes = 0;
  for (const YAML::Node& doc : YAML::LoadAll(ReadFile(kDeploy + "k8s/kvstash.yaml"))) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "ConfigMap") {
      auto c = server::ParseConfig(doc["data"]["kvstashd.yaml"].as<std::string>(), {});
      ASSERT_TRUE(c.ok()) << c.status();
      socket = c->server.local_socket;
      // The local arena socket needs the arena in shared memory.
      EXPECT_TRUE(c->ucx.enabled && c->ucx.direct_access);
      arena_bytes = c->storage.dram.capacity_bytes;
    }
  }
  ASSERT_FALSE(socket.empty()) << "the DaemonSet serves no server.local_socket";
  const std::string dir = socket.substr(0, socket.rfind('/'));
  for (const YAML::Node& doc : YAML::LoadAll(ReadFile(kDeploy + "k8s/kvstash.yaml"))) {
    if (doc["kind"].as<std::string>() != "DaemonSet") continue;
    const YAML::Node spec = doc["spec"]["template"]["spec"];
    daemon_host_path = HostPathMountedAt(spec, dir);
    // The init container hands the directory to the daemon's uid.
    EXPECT_EQ(spec["initContainers"][0]["volumeMounts"][0]["mountPath"].as<std::string>(""), dir);
    // /dev/shm holds the arena's file: memory-backed and at least as large.
    bool shm = false;
    for (const YAML::Node& m : spec["containers"][0]["volumeMounts"]) {
      if (m["mountPath"].as<std::string>() != "/dev/shm") continue;
      for (const YAML::Node& v : spec["volumes"]) {
        if (v["name"].as<std::string>() != m["name"].as<std::string>()) continue;
        EXPECT_EQ(v["emptyDir"]["medium"].as<std::string>(""), "Memory");
        // A Kubernetes quantity ("33Gi") is a byte size without its B.
        absl::StatusOr<uint64_t> limit =
            ParseByteSize(v["emptyDir"]["sizeLimit"].as<std::string>("") + "B");
        ASSERT_TRUE(limit.ok()) << limit.status();
        EXPECT_GE(*limit, arena_bytes);
        shm = true;
      }
    }
    EXPECT_TRUE(shm) << "no memory-backed /dev/shm for the arena";
  }
  ASSERT_FALSE(daemon_host_path.empty()) << "the daemon's " << dir << " is not a hostPath";
  bool pod = false;
  for (const YAML::Node& doc : YAML::LoadAll(ReadFile(kDeploy + "k8s/engine-pod.yaml"))) {
    if (doc["kind"].as<std::string>() != "Pod") continue;
    pod = true;
    const YAML::Node spec = doc["spec"];
    EXPECT_FALSE(spec["hostNetwork"].as<bool>(false));
    EXPECT_EQ(HostPathMountedAt(spec, dir), daemon_host_path);
    std::string args;
    for (const YAML::Node& a : spec["containers"][0]["args"]) args += a.as<std::string>();
    EXPECT_NE(args.find("\"uri\": \"unix://" + socket + "\""), std::string::npos) << args;
    EXPECT_EQ(spec["containers"][0]["env"][0]["name"].as<std::string>(""), "KVSTASH_TOKEN");
  }
  EXPECT_TRUE(pod);
}

TEST(DeployFilesTest, SystemdUnitVerifies) {
  if (std::system("command -v systemd-analyze >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "systemd-analyze is not installed";
  }
  // verify checks that ExecStart's binary exists: point it at the one just built.
  const std::string unit = ReadFile(kDeploy + "kvstashd.service");
  ASSERT_NE(unit.find("ExecStart=/usr/bin/kvstashd "), std::string::npos);
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/kvstashd.service";
  std::ofstream(path) << absl::StrReplaceAll(unit, {{"/usr/bin/kvstashd", KVSTASHD_PATH}});
  auto result = RunCommand({"/bin/sh", "-c", "systemd-analyze verify " + path + " 2>&1"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->exit.exited && result->exit.code == 0) << result->output;
  // Warnings about the unit name the file; other units of the host are not ours to judge.
  EXPECT_EQ(result->output.find("kvstashd.service"), std::string::npos) << result->output;
}

}  // namespace
}  // namespace kvstash::testing
