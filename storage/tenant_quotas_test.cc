#include "storage/tenant_quotas.h"

#include "gtest/gtest.h"
#include "storage/test_util.h"

namespace kvstash::storage {
namespace {

using testing::MakeKey;

ChunkStoreOptions::Tenants Options(const std::string& overrides) {
  ChunkStoreOptions::Tenants o;
  o.dram_quota_bytes = 1000;
  o.nvme_quota_bytes = 0;
  o.pin_quota_bytes = 100;
  o.overrides = overrides;
  return o;
}

TEST(TenantQuotasTest, ParsesOverridesOverTheDefaults) {
  auto t = ParseTenantQuotas(Options(" acme: dram=2KiB, nvme=1MiB ; beta:pin=0"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->defaults.dram_bytes, 1000u);
  EXPECT_EQ(t->overrides.at("acme").dram_bytes, 2048u);
  EXPECT_EQ(t->overrides.at("acme").nvme_bytes, 1u << 20);
  EXPECT_EQ(t->overrides.at("acme").pin_bytes, 100u);  // left out: the default
  EXPECT_EQ(t->overrides.at("beta").pin_bytes, 0u);
  EXPECT_TRUE(ParseTenantQuotas(Options("")).ok());
}

TEST(TenantQuotasTest, BadOverridesNameTheProblem) {
  for (const char* bad :
       {"acme", "acme:", ":dram=1", "acme:ram=1", "acme:dram=lots", "acme:dram=1;acme:pin=2"}) {
    absl::Status s = ParseTenantQuotas(Options(bad)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("tenants.overrides"), absl::string_view::npos) << s;
  }
}

TEST(TenantQuotasTest, DramExcessFollowsTheNamespacesTenant) {
  TenantQuotas q(Options("big:dram=5000"), 1000);
  const Key128 a = MakeKey(1), b = MakeKey(2);
  q.Bind(b, "big");
  q.AddDram(a, 900);
  EXPECT_EQ(q.DramExcess(a, 100), 0u);
  EXPECT_EQ(q.DramExcess(a, 300), 200u);
  EXPECT_EQ(q.DramExcess(b, 300), 0u);  // another tenant, another quota
  // Rebinding moves the namespace's bytes to the new tenant.
  q.Bind(a, "big");
  EXPECT_EQ(q.DramExcess(b, 4100), 0u);
  EXPECT_EQ(q.DramExcess(b, 4200), 100u);
  EXPECT_EQ(q.BoundTenant(a), "big");
  EXPECT_EQ(q.BoundTenant(MakeKey(3)), "");
  const TenantMatcher big = q.MatcherFor(a);
  EXPECT_TRUE(big(a));
  EXPECT_TRUE(big(b));
  EXPECT_FALSE(big(MakeKey(3)));
  q.AddDram(MakeKey(4), 10);                              // known, unbound
  const TenantMatcher others = q.MatcherFor(MakeKey(3));  // the default tenant
  EXPECT_TRUE(others(MakeKey(4)));
  EXPECT_FALSE(others(a));
}

TEST(TenantQuotasTest, UnknownNamespacesBelongToNoTenant) {
  // After a restart NVMe holds namespaces no one bound yet: no quota may claim them.
  TenantQuotas q(Options("a:nvme=1000"), 1000);
  const Key128 bound_a = MakeKey(1), bound_default = MakeKey(2), used = MakeKey(3);
  q.Bind(bound_a, "a");
  q.Bind(bound_default, "");
  q.AddDram(used, 10);
  const TenantMatcher def = q.MatcherFor(MakeKey(9));
  EXPECT_TRUE(def(bound_default));
  EXPECT_TRUE(def(used));
  EXPECT_FALSE(def(bound_a));
  EXPECT_FALSE(def(MakeKey(4)));
  const TenantMatcher a = q.MatcherFor(bound_a);
  EXPECT_TRUE(a(bound_a));
  EXPECT_FALSE(a(MakeKey(4)));
}

TEST(TenantQuotasTest, PinsAreBoundPerTenantAndInTotal) {
  TenantQuotas q(Options("small:pin=10;large:pin=1000"), 150);
  const Key128 s = MakeKey(1), l = MakeKey(2);
  q.Bind(s, "small");
  q.Bind(l, "large");
  EXPECT_TRUE(q.TryPin(s, 10));
  EXPECT_FALSE(q.TryPin(s, 1));
  EXPECT_TRUE(q.TryPin(l, 140));
  EXPECT_FALSE(q.TryPin(l, 1));  // the global bound
  q.Unpin(s, 10);
  EXPECT_TRUE(q.TryPin(l, 10));
}

}  // namespace
}  // namespace kvstash::storage
