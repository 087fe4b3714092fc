#include "server/namespace_registry.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvstash::server {
namespace {

using ::testing::HasSubstr;

v1::NamespaceSpec LlamaSpec() {
  Namespace ns;
  ns.model_id = "meta-llama/Meta-Llama-3-8B";
  ns.num_layers = 32;
  ns.kv_heads = 8;
  ns.head_dim = 128;
  return NamespaceToProto(ns);
}

std::string Bytes(const Key128& k) { return std::string(k.begin(), k.end()); }

TEST(NamespaceProtoTest, RoundTripsEveryField) {
  Namespace ns;
  ns.tenant = "acme";
  ns.model_id = "m";
  ns.revision = "r1";
  ns.dtype = "bf16";
  ns.kv_layout = "layout";
  ns.num_layers = 1;
  ns.kv_heads = 2;
  ns.head_dim = 3;
  ns.tp_rank = 4;
  ns.tp_size = 5;
  ns.chunk_tokens = 6;
  ns.hash_algo = HashAlgo::kSha256_128;
  Namespace back = NamespaceFromProto(NamespaceToProto(ns));
  EXPECT_EQ(back.CanonicalEncoding(), ns.CanonicalEncoding());
  EXPECT_EQ(back.Id(), ns.Id());
}

TEST(NamespaceProtoTest, UnsetHashAlgoMeansXxh3) {
  v1::NamespaceSpec spec = LlamaSpec();
  spec.clear_hash_algo();
  EXPECT_EQ(NamespaceFromProto(spec).hash_algo, HashAlgo::kXxh3_128);
}

TEST(NamespaceRegistryTest, RegisterReturnsTheNamespaceId) {
  NamespaceRegistry registry;
  absl::StatusOr<Key128> id = registry.Register(LlamaSpec());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, NamespaceFromProto(LlamaSpec()).Id());
  EXPECT_TRUE(registry.Check(*id).ok());
  EXPECT_EQ(registry.size(), 1u);
  // Registering again is idempotent.
  EXPECT_EQ(*registry.Register(LlamaSpec()), *id);
  EXPECT_EQ(registry.size(), 1u);
  absl::StatusOr<v1::NamespaceSpec> spec = registry.Find(*id);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->model_id(), "meta-llama/Meta-Llama-3-8B");
  ASSERT_EQ(registry.All().size(), 1u);
  EXPECT_EQ(registry.All()[0].first, *id);
}

TEST(NamespaceRegistryTest, InvalidSpecIsRefused) {
  NamespaceRegistry registry;
  v1::NamespaceSpec spec = LlamaSpec();
  spec.clear_model_id();
  absl::StatusOr<Key128> id = registry.Register(spec);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("model_id"));
  spec = LlamaSpec();
  spec.set_tp_rank(2);
  spec.set_tp_size(2);
  EXPECT_EQ(registry.Register(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec = LlamaSpec();
  spec.set_hash_algo(99);
  EXPECT_EQ(registry.Register(spec).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.size(), 0u);
}

TEST(NamespaceRegistryTest, UnknownIdIsAFailedPrecondition) {
  NamespaceRegistry registry;
  Key128 id{};
  id[0] = 0xab;
  absl::Status s = registry.Check(id);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "unknown namespace " + KeyToHex(id) + "; call RegisterNamespace first");
  EXPECT_EQ(registry.Resolve(Bytes(id)).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.Find(id).status().code(), absl::StatusCode::kNotFound);
}

TEST(NamespaceRegistryTest, ResolveChecksTheIdLength) {
  NamespaceRegistry registry;
  Key128 id = *registry.Register(LlamaSpec());
  EXPECT_EQ(*registry.Resolve(Bytes(id)), id);
  EXPECT_EQ(registry.Resolve("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Resolve("short").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Resolve(Bytes(id) + "x").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NamespaceRegistryTest, ConcurrentRegisterAndCheck) {
  NamespaceRegistry registry;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&registry, t] {
      for (uint32_t i = 0; i < 200; ++i) {
        v1::NamespaceSpec spec = LlamaSpec();
        spec.set_num_layers(i % 50 + 1);
        spec.set_tp_size(2);
        spec.set_tp_rank(t % 2);
        absl::StatusOr<Key128> id = registry.Register(spec);
        ASSERT_TRUE(id.ok());
        EXPECT_TRUE(registry.Check(*id).ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(registry.size(), 100u);
}

}  // namespace
}  // namespace kvstash::server
