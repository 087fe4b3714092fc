#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "common/bearer_token.h"
#include "common/ucx_setup.h"
#include "kvstash/client.h"
#include "kvstash/client_options_schema.h"
#include "proto/ucx_wire.h"
#include "testing/generated_text.h"

namespace kvstash {
namespace {

TEST(ClientOptionsTest, DefaultsAreValid) { EXPECT_TRUE(ClientOptions().Validate().ok()); }

// A default client and a default daemon must agree on the TCP segment (see ucx_wire.h).
TEST(ClientOptionsTest, TcpSegmentDefaultIsTheDaemons) {
  EXPECT_EQ(static_cast<uint64_t>(ClientOptions().ucx_tcp_segment_bytes),
            ucx_setup::kDefaultTcpSegmentBytes);
}

// Each case breaks one field; the error must name that field.
struct BadCase {
  const char* field;
  void (*mutate)(ClientOptions*);
};

TEST(ClientOptionsTest, RejectsEachFieldOutOfRange) {
  const BadCase cases[] = {
      {"deadline_ms", [](ClientOptions* o) { o->deadline_ms = 0; }},
      {"connect_timeout_ms", [](ClientOptions* o) { o->connect_timeout_ms = -1; }},
      {"max_retries", [](ClientOptions* o) { o->max_retries = -1; }},
      {"max_retries", [](ClientOptions* o) { o->max_retries = 1000; }},
      {"initial_backoff_ms", [](ClientOptions* o) { o->initial_backoff_ms = 0; }},
      {"max_backoff_ms", [](ClientOptions* o) { o->max_backoff_ms = o->initial_backoff_ms - 1; }},
      {"frame_bytes", [](ClientOptions* o) { o->frame_bytes = 100; }},
      {"frame_bytes", [](ClientOptions* o) { o->frame_bytes = 128u << 20; }},
      {"connections", [](ClientOptions* o) { o->connections = 0; }},
      {"async_threads", [](ClientOptions* o) { o->async_threads = 0; }},
      {"ucx_idle_progress_ms", [](ClientOptions* o) { o->ucx_idle_progress_ms = -1; }},
      {"ucx_idle_progress_ms", [](ClientOptions* o) { o->ucx_idle_progress_ms = 60000; }},
      {"ucx_copy_threads", [](ClientOptions* o) { o->ucx_copy_threads = -1; }},
      {"ucx_copy_threads", [](ClientOptions* o) { o->ucx_copy_threads = 17; }},
      {"ucx_tcp_segment_bytes", [](ClientOptions* o) { o->ucx_tcp_segment_bytes = 8 << 10; }},
      {"ucx_tcp_segment_bytes", [](ClientOptions* o) { o->ucx_tcp_segment_bytes = 32 << 20; }},
  };
  for (const BadCase& c : cases) {
    ClientOptions o;
    c.mutate(&o);
    absl::Status s = o.Validate();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.field << ": " << s;
    EXPECT_NE(s.message().find(c.field), absl::string_view::npos) << s;
  }
}

TEST(ClientOptionsTest, AcceptsBoundaries) {
  ClientOptions o;
  o.max_retries = 0;
  o.frame_bytes = 1024;
  o.max_backoff_ms = o.initial_backoff_ms;
  o.connections = 256;
  o.ucx_idle_progress_ms = 0;
  EXPECT_TRUE(o.Validate().ok());
  o.ucx_idle_progress_ms = 10000;
  EXPECT_TRUE(o.Validate().ok());
}

TEST(ClientOptionsTest, TokenComesFromTheOptionsElseTheEnvironmentAndIsChecked) {
  unsetenv(kTokenEnvVar);
  ClientOptions o;
  EXPECT_EQ(o.EffectiveToken(), "");
  EXPECT_TRUE(o.Validate().ok());
  setenv(kTokenEnvVar, "kvs_from-env", 1);
  EXPECT_EQ(o.EffectiveToken(), "kvs_from-env");
  o.token = "kvs_from-options";
  EXPECT_EQ(o.EffectiveToken(), "kvs_from-options");
  EXPECT_TRUE(o.Validate().ok());
  for (const char* bad : {"kvs_a b", "kvs_ab\n", "kvs_\tab", "kvs_\x01"}) {
    o.token = bad;
    const absl::Status s = o.Validate();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << bad;
    EXPECT_NE(s.message().find("ClientOptions.token"), absl::string_view::npos) << s;
    EXPECT_EQ(s.message().find("kvs_"), absl::string_view::npos) << "token echoed: " << s;
  }
  o.token.clear();
  setenv(kTokenEnvVar, "kvs_env\n", 1);
  const absl::Status s = o.Validate();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find(kTokenEnvVar), absl::string_view::npos) << s;
  o.token = std::string(5000, 'a');
  EXPECT_TRUE(absl::IsInvalidArgument(o.Validate()));
  unsetenv(kTokenEnvVar);
}

TEST(ClientConnectTest, RejectsBadUriAndOptionsBeforeConnecting) {
  auto c = Client::Connect("http://127.0.0.1:1", {});
  EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
  EXPECT_NE(c.status().message().find("http"), absl::string_view::npos);
  ClientOptions bad;
  bad.connections = 0;
  c = Client::Connect("grpc://127.0.0.1:1", bad);
  EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
  c = Client::Connect("ucx://127.0.0.1:1", bad);
  EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
}

TEST(ClientConnectTest, NoDaemonIsUnavailable) {
  ClientOptions o;
  o.connect_timeout_ms = 200;
  // Port 1 on loopback: nothing listens there on a test host.
  auto c = Client::Connect("grpc://127.0.0.1:1", o);
  EXPECT_TRUE(absl::IsUnavailable(c.status())) << c.status();
}

}  // namespace
}  // namespace kvstash

namespace kvstash {
namespace {

TEST(ClientOptionsTest, ReadmeTableIsGenerated) {
  const absl::Status s =
      CheckGeneratedPart(std::string(KVSTASH_SOURCE_DIR) + "/client/README.md", kGeneratedBegin,
                         kGeneratedEnd, ClientOptionsTable() + "\n", kRegenerate);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(ClientOptionsTest, SetsEachKindByName) {
  ClientOptions o;
  EXPECT_TRUE(SetClientOption(&o, "deadline_ms", "250").ok());
  EXPECT_TRUE(SetClientOption(&o, "frame_bytes", "65536").ok());
  EXPECT_TRUE(SetClientOption(&o, "ucx_direct", "false").ok());
  EXPECT_TRUE(SetClientOption(&o, "ucx_tls", "sm,self").ok());
  EXPECT_TRUE(SetClientOption(&o, "cluster.replicas", "3").ok());
  EXPECT_TRUE(SetClientOption(&o, "cluster.transport", "ucx").ok());
  EXPECT_EQ(o.deadline_ms, 250);
  EXPECT_EQ(o.frame_bytes, 65536u);
  EXPECT_FALSE(o.ucx_direct);
  EXPECT_EQ(o.ucx_tls, "sm,self");
  EXPECT_EQ(o.cluster.replicas, 3);
  EXPECT_EQ(o.cluster.transport, "ucx");
}

TEST(ClientOptionsTest, SetRefusesUnknownNamesAndWrongKinds) {
  ClientOptions o;
  const struct {
    const char* name;
    const char* value;
    const char* message;
  } cases[] = {
      {"no_such_option", "1", "unknown client option \"no_such_option\""},
      {"replicas", "2", "unknown client option \"replicas\""},  // it is cluster.replicas
      {"deadline_ms", "soon", "deadline_ms: expected an integer from -9223372036854775808 to"},
      {"frame_bytes", "-1", "frame_bytes: expected an integer"},
      {"frame_bytes", "4294967296", "frame_bytes: expected an integer from 0 to 4294967295"},
      {"connections", "2147483648", "connections: expected an integer"},
      {"ucx_direct", "yes", "ucx_direct: expected true or false"},
  };
  for (const auto& c : cases) {
    const absl::Status s = SetClientOption(&o, c.name, c.value);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.name << ": " << s;
    EXPECT_NE(s.message().find(c.message), absl::string_view::npos) << s;
  }
  EXPECT_EQ(o.deadline_ms, ClientOptions().deadline_ms);  // nothing changed
  // Ranges are Validate's.
  ASSERT_TRUE(SetClientOption(&o, "cluster.replicas", "0").ok());
  EXPECT_NE(o.Validate().message().find("ClientOptions.cluster.replicas = 0"),
            absl::string_view::npos);
}

TEST(ClusterOptionsTest, DefaultsAreValid) { EXPECT_TRUE(ClusterOptions().Validate().ok()); }

struct BadClusterCase {
  const char* field;
  void (*mutate)(ClusterOptions*);
};

TEST(ClusterOptionsTest, RejectsEachFieldOutOfRange) {
  const BadClusterCase cases[] = {
      {"cluster.transport", [](ClusterOptions* o) { o->transport = "tcp"; }},
      {"cluster.transport", [](ClusterOptions* o) { o->transport = ""; }},
      {"cluster.replicas", [](ClusterOptions* o) { o->replicas = 0; }},
      {"cluster.replicas", [](ClusterOptions* o) { o->replicas = 9; }},
      {"cluster.hot_fetches", [](ClusterOptions* o) { o->hot_fetches = -1; }},
      {"cluster.hot_fetches", [](ClusterOptions* o) { o->hot_fetches = 1000001; }},
      {"cluster.node_deadline_ms", [](ClusterOptions* o) { o->node_deadline_ms = 0; }},
      {"cluster.breaker_failures", [](ClusterOptions* o) { o->breaker_failures = 0; }},
      {"cluster.breaker_open_ms", [](ClusterOptions* o) { o->breaker_open_ms = 0; }},
      {"cluster.handover_ms", [](ClusterOptions* o) { o->handover_ms = -1; }},
      {"cluster.dns_refresh_ms", [](ClusterOptions* o) { o->dns_refresh_ms = 0; }},
  };
  for (const BadClusterCase& c : cases) {
    ClusterOptions o;
    c.mutate(&o);
    absl::Status s = o.Validate();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.field << ": " << s;
    EXPECT_NE(s.message().find(c.field), absl::string_view::npos) << s;
  }
}

TEST(ClusterOptionsTest, AcceptsBoundaries) {
  ClusterOptions o;
  o.transport = "ucx";
  o.replicas = 8;
  o.hot_fetches = 0;
  o.node_deadline_ms = 1;
  o.breaker_failures = 1;
  o.breaker_open_ms = 1;
  o.handover_ms = 0;
  o.dns_refresh_ms = 1;
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
  o.transport = "grpcs";
  o.replicas = 1;
  o.hot_fetches = 1000000;
  EXPECT_TRUE(o.Validate().ok()) << o.Validate();
}

TEST(ClusterConnectTest, RejectsBadClusterUriAndOptionsBeforeConnecting) {
  EXPECT_TRUE(absl::IsInvalidArgument(Client::Connect("static://", {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Client::Connect("etcd://127.0.0.1:1", {}).status()));
  ClientOptions options;
  options.cluster.replicas = 0;
  absl::Status s = Client::Connect("static://127.0.0.1:1", options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("cluster.replicas"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace kvstash
