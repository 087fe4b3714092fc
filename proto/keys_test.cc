// Pins the key derivation byte for byte. The hex vectors below were computed by keys.cc and
// cross-checked against an independent Python implementation of docs/keys.md (hashlib
// SHA-256, python-xxhash XXH3-128). If one of them changes, keys changed: every stored
// chunk becomes unreachable, so that needs a new namespace magic, not a vector update.
#include "kvstash/keys.h"

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kvstash {
namespace {

// The namespace all vectors use (docs/keys.md, "Test vectors").
Namespace SampleNamespace(HashAlgo algo) {
  Namespace ns;
  ns.tenant = "acme";
  ns.model_id = "meta-llama/Meta-Llama-3-8B";
  ns.revision = "main";
  ns.num_layers = 32;
  ns.kv_heads = 8;
  ns.head_dim = 128;
  ns.chunk_tokens = 16;
  ns.hash_algo = algo;
  return ns;
}

std::vector<int32_t> Iota(int n) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<std::string> Hexes(const std::vector<Key128>& keys) {
  std::vector<std::string> out;
  for (const Key128& k : keys) out.push_back(KeyToHex(k));
  return out;
}

std::string BytesToHex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {kDigits[c >> 4], kDigits[c & 0xf]};
  return out;
}

// CanonicalEncoding() of SampleNamespace() up to and including chunk_tokens; the u32 LE
// hash_algo follows.
constexpr char kEncodingHexWithoutAlgo[] =
    "6b7673746173682e6e732e7631"                            // magic "kvstash.ns.v1"
    "0400000061636d65"                                      // tenant "acme"
    "1a0000006d6574612d6c6c616d612f4d6574612d4c6c616d612d"  // model_id "meta-llama/..."
    "332d3842"                                              //   "...-3-8B"
    "040000006d61696e"                                      // revision "main"
    "0400000066703136"                                      // dtype "fp16"
    "190000006b7673746173682e6c617965725f6b765f746f6b656e"  // kv_layout "kvstash...token"
    "2e7631"                                                //   ".v1"
    "20000000"                                              // num_layers 32
    "08000000"                                              // kv_heads 8
    "80000000"                                              // head_dim 128
    "00000000"                                              // tp_rank 0
    "01000000"                                              // tp_size 1
    "10000000";                                             // chunk_tokens 16

TEST(NamespaceTest, CanonicalEncodingBytes) {
  EXPECT_EQ(BytesToHex(SampleNamespace(HashAlgo::kXxh3_128).CanonicalEncoding()),
            std::string(kEncodingHexWithoutAlgo) + "01000000");
  EXPECT_EQ(BytesToHex(SampleNamespace(HashAlgo::kSha256_128).CanonicalEncoding()),
            std::string(kEncodingHexWithoutAlgo) + "02000000");
}

TEST(NamespaceTest, IdVectors) {
  EXPECT_EQ(KeyToHex(SampleNamespace(HashAlgo::kXxh3_128).Id()),
            "6ee7b27620b398d0b911caceda3d3b92");
  EXPECT_EQ(KeyToHex(SampleNamespace(HashAlgo::kSha256_128).Id()),
            "0c0e5d7d5fcb1f5a2ae72cd42ba32275");
}

TEST(NamespaceTest, EveryFieldChangesId) {
  const Key128 base = SampleNamespace(HashAlgo::kXxh3_128).Id();
  std::vector<Namespace> variants(12, SampleNamespace(HashAlgo::kXxh3_128));
  variants[0].tenant = "other";
  variants[1].model_id += "-Instruct";
  variants[2].revision = "";
  variants[3].dtype = "bf16";
  variants[4].kv_layout = "kvstash.layer_kv_token.v2";
  variants[5].num_layers = 31;
  variants[6].kv_heads = 4;
  variants[7].head_dim = 64;
  variants[8].tp_size = 2;
  variants[9].tp_size = 2;
  variants[9].tp_rank = 1;
  variants[10].chunk_tokens = 256;
  variants[11].hash_algo = HashAlgo::kSha256_128;
  for (size_t i = 0; i < variants.size(); ++i) EXPECT_NE(variants[i].Id(), base) << i;
}

TEST(NamespaceTest, StringBoundariesAreUnambiguous) {
  // Length prefixes keep ("ab", "c") and ("a", "bc") apart.
  Namespace a = SampleNamespace(HashAlgo::kXxh3_128);
  Namespace b = a;
  a.tenant = "ab";
  a.model_id = "c";
  b.tenant = "a";
  b.model_id = "bc";
  EXPECT_NE(a.CanonicalEncoding(), b.CanonicalEncoding());
  EXPECT_NE(a.Id(), b.Id());
}

TEST(NamespaceTest, ValidateAcceptsSample) {
  EXPECT_TRUE(SampleNamespace(HashAlgo::kXxh3_128).Validate().ok());
  EXPECT_TRUE(SampleNamespace(HashAlgo::kSha256_128).Validate().ok());
}

void ExpectInvalid(const Namespace& ns, const std::string& substring) {
  const absl::Status s = ns.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(std::string(s.message()).find(substring), std::string::npos) << s;
}

TEST(NamespaceTest, ValidateRejectsBadFields) {
  Namespace ns = SampleNamespace(HashAlgo::kXxh3_128);
  ns.model_id.clear();
  ExpectInvalid(ns, "namespace.model_id is empty");
  ns = SampleNamespace(HashAlgo::kXxh3_128);
  ns.chunk_tokens = 0;
  ExpectInvalid(ns, "namespace.chunk_tokens");
  ns = SampleNamespace(HashAlgo::kXxh3_128);
  ns.tp_size = 0;
  ExpectInvalid(ns, "namespace.tp_size");
  ns = SampleNamespace(HashAlgo::kXxh3_128);
  ns.tp_size = 2;
  ns.tp_rank = 2;
  ExpectInvalid(ns, "namespace.tp_rank");
  ns = SampleNamespace(HashAlgo::kXxh3_128);
  ns.hash_algo = static_cast<HashAlgo>(7);
  ExpectInvalid(ns, "namespace.hash_algo");
}

TEST(NamespaceTest, ValidateRejectsBadStrings) {
  Namespace ns = SampleNamespace(HashAlgo::kXxh3_128);
  ns.revision = std::string(256, 'r');
  EXPECT_TRUE(ns.Validate().ok());
  ns.revision.push_back('r');
  ExpectInvalid(ns, "namespace.revision");
  ns = SampleNamespace(HashAlgo::kXxh3_128);
  ns.dtype = std::string("fp\0 16", 5);
  ExpectInvalid(ns, "namespace.dtype contains a NUL");
  ns = SampleNamespace(HashAlgo::kXxh3_128);
  ns.tenant = std::string(300, 't');
  ExpectInvalid(ns, "namespace.tenant");
}

struct ChainVectors {
  HashAlgo algo;
  const char* root;
  const char* prefix[3];      // tokens 0..47, chunk_tokens 16, no extra
  const char* with_extra[3];  // same, extra = "lora:adapter-7"
  const char* position_free;  // PositionIndependentKey(tokens 0..15)
  const char* engine;         // FromEngineHash("vllm-block-0")
  const char* edge_tokens;    // Next(root, {-1, INT32_MIN, INT32_MAX})
  const char* tp1_id;         // namespace id with tp_rank 1 of tp_size 2
  const char* tp1_prefix0;    // first prefix key with tp_rank 1 of tp_size 2
};

const ChainVectors kVectors[] = {
    {HashAlgo::kXxh3_128,
     "29916062246bd8b4e7afbd1887b153c8",
     {"49425af520939d36f6fa8df66f0e6513", "5741ef70fd9eb8862f0db17223975999",
      "6465999524cacf5151ae137501dd579a"},
     {"57f858319f37084de629507cb9a567c3", "f47c48c0b133acd7eec88b32302ec0c6",
      "eccc85fd0eeb8854cc5f052468e2b618"},
     "c02e314bca4b6991d6133e5064fd6dcc",
     "c027037772e11f3739d850356fddcc7c",
     "f40c0b66cab9256c51d72ecf857a2e0a",
     "45302ff3bb52402495fdeb4c93362578",
     "0325013a575ff0dc4fdd166cc8d8036f"},
    {HashAlgo::kSha256_128,
     "97ae186d2e9588bec78fb7c45f620e30",
     {"f3baa879fbaad7f4350bb9db7f771bc2", "6cd0ad0ded041668b7cade62117a0e01",
      "a4ed46dbbbe0247da656cb1c257c1160"},
     {"6e996b76705962eccc2dc4bb66f9e425", "783f0c2a4a62b7eec1655b7e84f7f011",
      "94e2089154f9e4e59c3f58a9aed8684d"},
     "bc49aa3d47472c2953f4719f032ebd2c",
     "486d1c69599f5092d74152149e535da8",
     "3a25fc0003bc449147828cf02aa28695",
     "8c4442608c83f6b5a879ce629927f419",
     "bc4ef4e7341ae903b170227fc7096940"},
};

class KeyChainVectorTest : public ::testing::TestWithParam<ChainVectors> {
 protected:
  const ChainVectors& v() const { return GetParam(); }
  KeyChain chain() const { return KeyChain(SampleNamespace(v().algo)); }
};

TEST_P(KeyChainVectorTest, Root) { EXPECT_EQ(KeyToHex(chain().Root()), v().root); }

TEST_P(KeyChainVectorTest, PrefixKeys) {
  const std::vector<std::string> want = {v().prefix[0], v().prefix[1], v().prefix[2]};
  EXPECT_EQ(Hexes(chain().PrefixKeys(Iota(48))), want);
}

TEST_P(KeyChainVectorTest, PrefixKeysWithExtra) {
  const std::vector<std::string> want = {v().with_extra[0], v().with_extra[1], v().with_extra[2]};
  EXPECT_EQ(Hexes(chain().PrefixKeys(Iota(48), "lora:adapter-7")), want);
}

TEST_P(KeyChainVectorTest, PositionIndependentKey) {
  EXPECT_EQ(KeyToHex(chain().PositionIndependentKey(Iota(16))), v().position_free);
}

TEST_P(KeyChainVectorTest, FromEngineHash) {
  EXPECT_EQ(KeyToHex(chain().FromEngineHash("vllm-block-0")), v().engine);
}

TEST_P(KeyChainVectorTest, TokensAreInt32LittleEndian) {
  const std::vector<int32_t> edge = {-1, INT32_MIN, INT32_MAX};
  EXPECT_EQ(KeyToHex(chain().Next(chain().Root(), edge)), v().edge_tokens);
}

TEST_P(KeyChainVectorTest, TensorParallelRankChangesKeys) {
  Namespace ns = SampleNamespace(v().algo);
  ns.tp_size = 2;
  ns.tp_rank = 1;
  EXPECT_EQ(KeyToHex(ns.Id()), v().tp1_id);
  const std::vector<Key128> keys = KeyChain(ns).PrefixKeys(Iota(16));
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(KeyToHex(keys[0]), v().tp1_prefix0);
  EXPECT_NE(KeyToHex(keys[0]), v().prefix[0]);
}

INSTANTIATE_TEST_SUITE_P(BothAlgos, KeyChainVectorTest, ::testing::ValuesIn(kVectors),
                         [](const auto& info) {
                           return info.param.algo == HashAlgo::kXxh3_128 ? "Xxh3" : "Sha256";
                         });

class KeyChainTest : public ::testing::TestWithParam<HashAlgo> {
 protected:
  KeyChain chain() const { return KeyChain(SampleNamespace(GetParam())); }
};

TEST_P(KeyChainTest, PrefixKeysIsChainOfNext) {
  const KeyChain c = chain();
  const std::vector<int32_t> t = Iota(48);
  Key128 k = c.Root();
  std::vector<Key128> want;
  for (size_t i = 0; i < 3; ++i) {
    k = c.Next(k, absl::MakeConstSpan(t).subspan(16 * i, 16));
    want.push_back(k);
  }
  EXPECT_EQ(c.PrefixKeys(t), want);
  // Empty extra is the plain form.
  EXPECT_EQ(c.Next(c.Root(), absl::MakeConstSpan(t).first(16), ""), want[0]);
}

TEST_P(KeyChainTest, PartialLastChunkGetsNoKey) {
  const KeyChain c = chain();
  const std::vector<Key128> full = c.PrefixKeys(Iota(48));
  EXPECT_EQ(c.PrefixKeys(Iota(47)), std::vector<Key128>(full.begin(), full.begin() + 2));
  EXPECT_EQ(c.PrefixKeys(Iota(63)), full);
  EXPECT_TRUE(c.PrefixKeys(Iota(15)).empty());
  EXPECT_TRUE(c.PrefixKeys({}).empty());
}

TEST_P(KeyChainTest, KeyNamesWholePrefix) {
  const KeyChain c = chain();
  std::vector<int32_t> t = Iota(48);
  const std::vector<Key128> before = c.PrefixKeys(t);
  t[0] = 1000;  // change chunk 0: every later key changes too
  const std::vector<Key128> after = c.PrefixKeys(t);
  for (size_t i = 0; i < 3; ++i) EXPECT_NE(before[i], after[i]) << i;
}

TEST_P(KeyChainTest, ExtraChangesKeys) {
  const KeyChain c = chain();
  const std::vector<int32_t> t = Iota(16);
  EXPECT_NE(c.Next(c.Root(), t, "a"), c.Next(c.Root(), t));
  EXPECT_NE(c.Next(c.Root(), t, "a"), c.Next(c.Root(), t, "b"));
  // The token count prefix keeps token bytes and extra bytes from trading places.
  const std::string one_token("\x10\x00\x00\x00", 4);
  EXPECT_NE(c.Next(c.Root(), Iota(17)), c.Next(c.Root(), t, one_token));
}

TEST_P(KeyChainTest, PositionIndependentKeyIgnoresPosition) {
  const KeyChain c = chain();
  std::vector<int32_t> doc = Iota(16);
  std::vector<int32_t> prompt = Iota(32);  // doc reappears at tokens 16..31
  for (int i = 0; i < 16; ++i) prompt[16 + i] = doc[i];
  const auto tail = absl::MakeConstSpan(prompt).subspan(16);
  EXPECT_EQ(c.PositionIndependentKey(tail), c.PositionIndependentKey(doc));
  EXPECT_NE(c.PositionIndependentKey(doc), c.PrefixKeys(doc)[0]);
  EXPECT_NE(c.PositionIndependentKey(doc), c.PositionIndependentKey(Iota(15)));
}

TEST_P(KeyChainTest, NamespaceSeparatesEveryKeyKind) {
  Namespace other_ns = SampleNamespace(GetParam());
  other_ns.tenant = "other";
  const KeyChain a = chain();
  const KeyChain b(other_ns);
  EXPECT_NE(a.Root(), b.Root());
  EXPECT_NE(a.PrefixKeys(Iota(16)), b.PrefixKeys(Iota(16)));
  EXPECT_NE(a.PositionIndependentKey(Iota(16)), b.PositionIndependentKey(Iota(16)));
  EXPECT_NE(a.FromEngineHash("h"), b.FromEngineHash("h"));
  EXPECT_NE(a.FromEngineHash("h"), a.FromEngineHash("i"));
}

// docs/keys.md, "Engine-hash keys": the namespace-free form, checked with python-xxhash.
TEST(EngineHashKeyTest, Vectors) {
  EXPECT_EQ(KeyToHex(EngineHashKey("vllm-block-0")), "a4e1cb297b56b70fed996313242bc2eb");
  EXPECT_EQ(KeyToHex(EngineHashKey("")), "16d7314d3a4fd1ad8ca3dde27961ba47");
  EXPECT_EQ(KeyToHex(EngineHashKey("model@00000000@0@ab12")), "9beba73d5d5041febf33a9c41851d9d6");
  EXPECT_NE(EngineHashKey("vllm-block-0"),
            KeyChain(SampleNamespace(HashAlgo::kXxh3_128)).FromEngineHash("vllm-block-0"));
}

TEST_P(KeyChainTest, ConstructorsAgree) {
  const Namespace ns = SampleNamespace(GetParam());
  const KeyChain from_ns(ns);
  const KeyChain from_id(ns.Id(), ns.hash_algo, ns.chunk_tokens);
  EXPECT_EQ(from_ns.namespace_id(), ns.Id());
  EXPECT_EQ(from_ns.chunk_tokens(), 16u);
  EXPECT_EQ(from_id.Root(), from_ns.Root());
  EXPECT_EQ(from_id.PrefixKeys(Iota(32)), from_ns.PrefixKeys(Iota(32)));
}

TEST_P(KeyChainTest, LongTokenListsStream) {
  // More tokens than one internal batch; the chunked stream must equal one Next() call.
  const KeyChain c(SampleNamespace(GetParam()).Id(), GetParam(), 1000);
  const std::vector<int32_t> t = Iota(2000);
  const std::vector<Key128> keys = c.PrefixKeys(t);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], c.Next(c.Root(), absl::MakeConstSpan(t).first(1000)));
}

INSTANTIATE_TEST_SUITE_P(BothAlgos, KeyChainTest,
                         ::testing::Values(HashAlgo::kXxh3_128, HashAlgo::kSha256_128),
                         [](const auto& info) {
                           return info.param == HashAlgo::kXxh3_128 ? "Xxh3" : "Sha256";
                         });

TEST(KeyHexTest, RoundTrip) {
  const Key128 key = {0x00, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
                      0xef, 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xff};
  const std::string hex = KeyToHex(key);
  EXPECT_EQ(hex, "000123456789abcdef1032547698baff");
  const absl::StatusOr<Key128> parsed = KeyFromHex(hex);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, key);
  const absl::StatusOr<Key128> upper = KeyFromHex("000123456789ABCDEF1032547698BAFF");
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(*upper, key);
}

TEST(KeyHexTest, RejectsBadHex) {
  for (const char* bad : {"", "00", "000123456789abcdef1032547698baf",
                          "000123456789abcdef1032547698baff0", "g00123456789abcdef1032547698baff",
                          "000123456789abcdef1032547698ba f", "0x0123456789abcdef1032547698baff"}) {
    EXPECT_EQ(KeyFromHex(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace kvstash
