// The cluster client with members that never answer: Connect still succeeds, data calls
// succeed with misses and unstored items, and each member's breaker opens.
#include "client/cluster_client.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvstash/client.h"

namespace kvstash::client_internal {
namespace {

// Nothing listens on these loopback ports (below 1024, not bindable without privileges).
constexpr char kDeadCluster[] = "static://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3";

Namespace Spec() {
  Namespace spec;
  spec.model_id = "cluster-client-test";
  spec.chunk_tokens = 16;
  return spec;
}

std::unique_ptr<Client> ConnectDead() {
  ClientOptions options;
  options.cluster.node_deadline_ms = 500;
  options.cluster.breaker_failures = 2;
  options.cluster.breaker_open_ms = 600000;
  auto client = Client::Connect(kDeadCluster, options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(ClusterClientTest, ConnectsWithoutReachingMembers) {
  std::unique_ptr<Client> client = ConnectDead();
  ASSERT_NE(client, nullptr);
  auto status = client->Cluster();
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(status->members.size(), 3u);
  EXPECT_EQ(status->members[0].id, "127.0.0.1:1");
  EXPECT_EQ(status->members[0].address, "127.0.0.1:1");
  EXPECT_FALSE(status->members[0].connected);
  EXPECT_EQ(status->member_set_changes, 0u);
}

TEST(ClusterClientTest, DeadMembersGiveMissesNotErrorsAndOpenTheirBreakers) {
  std::unique_ptr<Client> client = ConnectDead();
  ASSERT_NE(client, nullptr);
  auto ns = client->OpenNamespace(Spec());
  EXPECT_TRUE(absl::IsUnavailable(ns.status())) << ns.status();
  const NamespaceHandle handle{Spec().Id()};

  std::vector<Key128> keys(12);
  for (size_t i = 0; i < keys.size(); ++i) keys[i][0] = static_cast<uint8_t>(i + 1);
  std::vector<uint8_t> bytes(1024, 7);
  std::vector<PutItem> puts(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    puts[i].key = keys[i];
    puts[i].data = bytes.data();
    puts[i].size = bytes.size();
  }
  ASSERT_TRUE(client->Put(handle, absl::MakeSpan(puts)).ok());
  for (const PutItem& p : puts) EXPECT_TRUE(absl::IsUnavailable(p.status)) << p.status;

  auto hits = client->Lookup(handle, keys);
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->hit_count, 0u);
  std::vector<GetItem> gets(keys.size());
  std::vector<std::vector<uint8_t>> bufs(keys.size(), std::vector<uint8_t>(1024));
  for (size_t i = 0; i < keys.size(); ++i) {
    gets[i].key = keys[i];
    gets[i].data = bufs[i].data();
    gets[i].capacity = bufs[i].size();
  }
  ASSERT_TRUE(client->Get(handle, absl::MakeSpan(gets)).ok());
  for (const GetItem& g : gets) EXPECT_TRUE(absl::IsNotFound(g.status)) << g.status;
  auto exists = client->Exists(handle, keys);
  ASSERT_TRUE(exists.ok());
  for (ChunkTier t : *exists) EXPECT_EQ(t, ChunkTier::kNone);

  auto status = client->Cluster();
  ASSERT_TRUE(status.ok());
  for (const ClusterMemberStatus& m : status->members) {
    EXPECT_TRUE(m.breaker_open) << m.id;
    EXPECT_GE(m.call_errors, 2u) << m.id;
  }
  // Open breakers: no more calls are made.
  const uint64_t calls = status->members[0].calls;
  ASSERT_TRUE(client->Get(handle, absl::MakeSpan(gets)).ok());
  EXPECT_EQ(client->Cluster()->members[0].calls, calls);
  EXPECT_TRUE(absl::IsUnavailable(client->Health().status()));
}

TEST(ClusterClientTest, PutRejectsEmptyItemsAsAWhole) {
  std::unique_ptr<Client> client = ConnectDead();
  ASSERT_NE(client, nullptr);
  std::vector<PutItem> puts(1);
  EXPECT_TRUE(
      absl::IsInvalidArgument(client->Put(NamespaceHandle{Spec().Id()}, absl::MakeSpan(puts))));
}

TEST(ClusterClientTest, UcxWithTlsOptionsFailsConnectNotEachLookup) {
  ClientOptions options;
  options.cluster.transport = "ucx";
  options.tls_ca_file = "/nonexistent/ca.pem";
  auto client = Client::Connect(kDeadCluster, options);
  EXPECT_TRUE(absl::IsInvalidArgument(client.status())) << client.status();
}

TEST(ClusterClientTest, EtcdFilesOnlyForEtcdUris) {
  ClientOptions options;
  options.cluster.etcd_ca_file = "/etc/etcd/ca.crt";
  auto client = Client::Connect(kDeadCluster, options);
  ASSERT_TRUE(absl::IsInvalidArgument(client.status())) << client.status();
  EXPECT_NE(client.status().message().find("etcd"), absl::string_view::npos);
  // etcds:// checks its files before dialling etcd, naming the option.
  client = Client::Connect("etcds://127.0.0.1:1/default", options);
  ASSERT_TRUE(absl::IsInvalidArgument(client.status())) << client.status();
  EXPECT_NE(client.status().message().find("ClientOptions.cluster.etcd_ca_file"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace kvstash::client_internal
