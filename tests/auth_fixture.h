// The authentication tests' fixture: a token file of principals over a few tenants, and
// a daemon started with it over each transport (tests/auth_test.cc, ucx_auth_test.cc).
//
// Thread-safety: a test fixture; used by one test thread.
#pragma once

#include <grpcpp/client_context.h>
#include <signal.h>
#include <stdlib.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/bearer_token.h"
#include "gtest/gtest.h"
#include "kvstash/client.h"
#include "kvstash/v1/kvstash.grpc.pb.h"
#include "proto/ucx_wire.h"
#include "testing/temp_dir.h"
#include "tests/daemon_fixture.h"
#include "tests/metrics_test_util.h"
#include "tests/subprocess.h"
#include "tests/test_util.h"
#include "tests/ucx_raw_client.h"

namespace kvstash::testing {

inline constexpr char kOpsToken[] = "kvs_ops-token";
inline constexpr char kAliceToken[] = "kvs_alice-token";
inline constexpr char kBobToken[] = "kvs_bob-token";
inline constexpr char kLimitedToken[] = "kvs_limited-token";
inline constexpr char kSingleToken[] = "kvs_single-token";

// One principal of the token file.
struct Entry {
  std::string name;
  std::string token;
  std::string rights;  // YAML lines after name and token_sha256, each indented 4
};

// The file every test starts from: ops may do anything (and map the arena), alice
// administers team-a, bob reads and writes team-b only, `limited` may start one call a
// second, `single` may have one call at a time; callers without a token (auth.required
// off) may read tenant `public`.
inline std::vector<Entry> DefaultEntries() {
  return {{"ops", kOpsToken,
           "    read: ['*']\n    write: ['*']\n    admin: ['*']\n"
           "    trusted: true\n"},
          {"alice", kAliceToken, "    read: [team-a]\n    write: [team-a]\n    admin: [team-a]\n"},
          {"bob", kBobToken, "    read: [team-b]\n    write: [team-b]\n"},
          {"limited", kLimitedToken,
           "    read: [team-c]\n    write: [team-c]\n"
           "    calls_per_s: 1\n"},
          {"single", kSingleToken,
           "    read: [integration]\n    write: [integration]\n    admin: [integration]\n"
           "    max_concurrent_calls: 1\n"}};
}

inline std::string TokenFileText(const std::vector<Entry>& entries) {
  std::string text = "principals:\n";
  for (const Entry& e : entries) {
    absl::StrAppend(&text, "  - name: ", e.name, "\n    token_sha256: ", HashToken(e.token), "\n",
                    e.rights);
  }
  absl::StrAppend(&text, "anonymous:\n  read: [public]\n");
  return text;
}

inline Namespace TenantNamespace(const std::string& tenant, const std::string& model) {
  Namespace spec = TestNamespace(model);
  spec.tenant = tenant;
  return spec;
}

bool IsCode(const absl::Status& s, absl::StatusCode code) { return s.code() == code; }

class AuthTest : public TransportFixture {
 protected:
  void SetUp() override {
    unsetenv(kTokenEnvVar);  // only the options' tokens count here
    absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("kvstash-auth");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::move(*dir);
    token_file_ = dir_->path() + "/tokens.yaml";
  }

  // Writes the token file atomically (a reload never sees half of it).
  void WriteTokens(const std::vector<Entry>& entries) {
    const std::string tmp = token_file_ + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << TokenFileText(entries);
    }
    ASSERT_EQ(std::rename(tmp.c_str(), token_file_.c_str()), 0);
  }

  // Starts the daemon with the default token file; `required` refuses calls without one.
  void StartWithAuth(bool required, int64_t reload_interval_ms = 0) {
    ASSERT_NO_FATAL_FAILURE(WriteTokens(DefaultEntries()));
    DaemonFixtureOptions o;
    o.transport = GetParam();
    o.set = DaemonSettingsFor(GetParam());
    o.set.push_back("storage.dram.capacity_bytes=256MiB");
    o.set.push_back("auth.token_file=" + token_file_);
    o.set.push_back(absl::StrCat("auth.required=", required ? "true" : "false"));
    o.set.push_back(absl::StrCat("auth.reload_interval_ms=", reload_interval_ms));
    o.set.insert(o.set.end(), extra_set_.begin(), extra_set_.end());
    o.client.token = kOpsToken;
    o.spec = TenantNamespace("team-a", "ops-ns");
    ASSERT_NO_FATAL_FAILURE(StartDaemon(o));
  }

  // A client presenting `token` ("" for none), or the status Connect refused it with.
  absl::StatusOr<std::unique_ptr<Client>> ConnectWith(const std::string& token) {
    ClientOptions options;
    options.token = token;
    options.max_retries = 0;
    return ConnectOver(*daemon_, transport(), options);
  }
  std::unique_ptr<Client> MustConnect(const std::string& token) {
    absl::StatusOr<std::unique_ptr<Client>> c = ConnectWith(token);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // The status of `token`'s first call that needs a principal: Connect's, when the
  // transport authenticates there (UCX's Hello), else OpenNamespace's.
  absl::Status FirstCallStatus(const std::string& token, const Namespace& spec) {
    absl::StatusOr<std::unique_ptr<Client>> c = ConnectWith(token);
    if (!c.ok()) return c.status();
    return (*c)->OpenNamespace(spec).status();
  }

  // The status of a one-chunk Put: the call's, or the chunk's when the call succeeded.
  absl::Status PutOne(Client& client, NamespaceHandle ns, const Key128& key, size_t size = 4096) {
    Payload p;
    p.key = key;
    p.bytes = PatternBytes(key, size);
    p.tokens = 16;
    return PutAll(client, ns, {p});
  }
  absl::Status GetStatus(Client& client, NamespaceHandle ns, const Key128& key) {
    std::vector<uint8_t> buf;
    GetItem item;
    absl::Status s = GetOne(client, ns, key, 1 << 20, &buf, &item);
    return s.ok() ? item.status : s;
  }

  // Puts a fresh 1 MiB pattern chunk through `client` into `ns` and reads it back intact.
  void ExpectRoundTrip(Client& client, NamespaceHandle ns) {
    const Key128 key = RandomKey(rng_);
    ASSERT_TRUE(PutOne(client, ns, key, 1 << 20).ok());
    std::vector<uint8_t> buf;
    GetItem item;
    ASSERT_TRUE(GetOne(client, ns, key, 1 << 20, &buf, &item).ok());
    ASSERT_TRUE(item.status.ok()) << item.status;
    EXPECT_EQ(FirstPatternMismatch(key, buf.data(), buf.size()), -1);
  }

  // The daemon still serves a good client: ops reads what it stored.
  void ExpectStillServing() {
    std::unique_ptr<Client> ops = MustConnect(kOpsToken);
    ASSERT_NE(ops, nullptr);
    const Key128 key = RandomKey(rng_);
    EXPECT_TRUE(PutOne(*ops, ns_, key).ok());
    EXPECT_TRUE(GetStatus(*ops, ns_, key).ok());
    EXPECT_TRUE(ops->Stats().ok());
  }

  // The value of the exposition line starting with `series` (labels included), or -1.
  double Metric(const std::string& series) {
    absl::StatusOr<double> v = MetricValue(*daemon_, series);
    return v.ok() ? *v : -1;
  }

  std::string TransportLabel() const { return IsGrpc(transport()) ? "grpc" : "ucx"; }

  std::unique_ptr<TempDir> dir_;
  std::string token_file_;
  std::vector<std::string> extra_set_;  // further --set lines for StartWithAuth
  std::mt19937_64 rng_{27};
};

}  // namespace kvstash::testing
