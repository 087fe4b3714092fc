// Namespace encoding and chunk-key derivation. docs/keys.md is the byte-exact specification;
// every byte written to a hash here must match it, and keys_test.cc pins the results.
#include "kvstash/keys.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

// XXH3_state_t lives on the stack (no malloc per key). Header and library come from the
// same distro package.
#include "common/xxh3_dispatch.h"

namespace kvstash {
namespace {

// Domain-separation prefixes (docs/keys.md, "Hash functions"). None is a prefix of another,
// so a namespace, root, position-independent or engine-hash input never equals another kind
// ("kvstash.engine" is the namespace-free engine-hash form).
constexpr absl::string_view kNamespaceMagic = "kvstash.ns.v1";
constexpr absl::string_view kRootDomain = "kvstash.root";
constexpr absl::string_view kChunkDomain = "kvstash.chunk";
constexpr absl::string_view kExtDomain = "kvstash.ext";
constexpr absl::string_view kEngineDomain = "kvstash.engine";

// Longest string field a namespace may carry, in bytes.
constexpr size_t kMaxNamespaceStringBytes = 256;

// Tokens are serialized through a stack buffer of this many tokens, then streamed.
constexpr size_t kTokenBatch = 256;

// Unknown algorithms and failing digest calls are programming or installation errors that
// would silently produce keys nobody else can reproduce; stop instead.
[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "kvstash/keys: fatal: %s\n", what);
  std::abort();
}

bool IsKnownAlgo(HashAlgo algo) {
  return algo == HashAlgo::kXxh3_128 || algo == HashAlgo::kSha256_128;
}

// Little-endian, written byte by byte so the encoding does not depend on the host.
void PutU32Le(uint32_t v, uint8_t* out) {
  out[0] = static_cast<uint8_t>(v);
  out[1] = static_cast<uint8_t>(v >> 8);
  out[2] = static_cast<uint8_t>(v >> 16);
  out[3] = static_cast<uint8_t>(v >> 24);
}

uint32_t CheckedU32(size_t n) {
  if (n > std::numeric_limits<uint32_t>::max()) Die("length does not fit in u32");
  return static_cast<uint32_t>(n);
}

// Streaming H for either algorithm, so token lists are hashed without building a buffer.
// Reusable: Finish() leaves it reset for the next message.
class Hasher {
 public:
  explicit Hasher(HashAlgo algo) : algo_(algo) {
    if (!IsKnownAlgo(algo)) Die("unknown HashAlgo");
    if (algo_ == HashAlgo::kSha256_128) {
      sha_ = EVP_MD_CTX_new();
      if (sha_ == nullptr) Die("EVP_MD_CTX_new failed");
    }
    Reset();
  }
  ~Hasher() { EVP_MD_CTX_free(sha_); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void Update(const void* data, size_t n) {
    if (algo_ == HashAlgo::kXxh3_128) {
      if (XXH3_128bits_update(&xxh_, data, n) != XXH_OK) Die("XXH3_128bits_update failed");
    } else if (EVP_DigestUpdate(sha_, data, n) != 1) {
      Die("EVP_DigestUpdate failed");
    }
  }
  void Update(absl::string_view s) { Update(s.data(), s.size()); }
  void Update(const Key128& k) { Update(k.data(), k.size()); }
  void UpdateU32(uint32_t v) {
    uint8_t b[4];
    PutU32Le(v, b);
    Update(b, sizeof(b));
  }
  // Each token as int32 two's complement, little-endian.
  void UpdateTokens(absl::Span<const int32_t> tokens) {
    uint8_t buf[kTokenBatch * 4];
    while (!tokens.empty()) {
      const size_t n = std::min(tokens.size(), kTokenBatch);
      for (size_t i = 0; i < n; ++i) PutU32Le(static_cast<uint32_t>(tokens[i]), buf + 4 * i);
      Update(buf, 4 * n);
      tokens.remove_prefix(n);
    }
  }

  Key128 Finish() {
    Key128 key;
    if (algo_ == HashAlgo::kXxh3_128) {
      // Key byte order = XXH128 canonical form: high64 big-endian, then low64 big-endian.
      XXH128_canonical_t canon;
      XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(&xxh_));
      static_assert(sizeof(canon.digest) == sizeof(key), "XXH128 canonical is 16 bytes");
      std::copy(std::begin(canon.digest), std::end(canon.digest), key.begin());
    } else {
      // SHA-256 truncated to its first 16 digest bytes (digest order as FIPS 180-4 emits).
      uint8_t digest[EVP_MAX_MD_SIZE];
      unsigned int len = 0;
      if (EVP_DigestFinal_ex(sha_, digest, &len) != 1 || len != 32) Die("SHA-256 final failed");
      std::copy(digest, digest + key.size(), key.begin());
    }
    Reset();
    return key;
  }

 private:
  void Reset() {
    if (algo_ == HashAlgo::kXxh3_128) {
      if (XXH3_128bits_reset(&xxh_) != XXH_OK) Die("XXH3_128bits_reset failed");
    } else if (EVP_DigestInit_ex(sha_, EVP_sha256(), nullptr) != 1) {
      Die("EVP_DigestInit_ex(sha256) failed");
    }
  }

  HashAlgo algo_;
  XXH3_state_t xxh_;
  EVP_MD_CTX* sha_ = nullptr;  // owned; only for kSha256_128
};

Key128 HashBytes(HashAlgo algo, absl::string_view data) {
  Hasher h(algo);
  h.Update(data);
  return h.Finish();
}

// h_i = H(prev || u32 LE token count || tokens int32 LE || u32 LE extra length || extra).
// Both lengths are explicit so no (tokens, extra) pair can encode like another.
Key128 ChainStep(Hasher& h, const Key128& prev, absl::Span<const int32_t> tokens,
                 absl::string_view extra) {
  h.Update(prev);
  h.UpdateU32(CheckedU32(tokens.size()));
  h.UpdateTokens(tokens);
  h.UpdateU32(CheckedU32(extra.size()));
  h.Update(extra);
  return h.Finish();
}

void AppendU32(uint32_t v, std::string* out) {
  char b[4];
  PutU32Le(v, reinterpret_cast<uint8_t*>(b));
  out->append(b, sizeof(b));
}

void AppendString(absl::string_view s, std::string* out) {
  AppendU32(CheckedU32(s.size()), out);
  out->append(s.data(), s.size());
}

absl::Status ValidateString(absl::string_view field, absl::string_view value) {
  if (value.size() > kMaxNamespaceStringBytes) {
    return absl::InvalidArgumentError(absl::StrCat("namespace.", field, " is ", value.size(),
                                                   " bytes; the limit is ",
                                                   kMaxNamespaceStringBytes));
  }
  if (value.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("namespace.", field, " contains a NUL byte"));
  }
  return absl::OkStatus();
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string KeyToBytes(const Key128& key) {
  return std::string(reinterpret_cast<const char*>(key.data()), key.size());
}

std::string KeyToHex(const Key128& key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * key.size(), '0');
  for (size_t i = 0; i < key.size(); ++i) {
    out[2 * i] = kDigits[key[i] >> 4];
    out[2 * i + 1] = kDigits[key[i] & 0xf];
  }
  return out;
}

// Accepts either case; KeyToHex always writes lowercase.
absl::StatusOr<Key128> KeyFromHex(absl::string_view hex) {
  Key128 key;
  if (hex.size() != 2 * key.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("key hex must be 32 characters, got ", hex.size()));
  }
  for (size_t i = 0; i < key.size(); ++i) {
    const int hi = HexDigit(hex[2 * i]);
    const int lo = HexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("key hex has a non-hex character near offset ", 2 * i));
    }
    key[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return key;
}

absl::Status Namespace::Validate() const {
  const std::pair<absl::string_view, const std::string*> strings[] = {
      {"tenant", &tenant}, {"model_id", &model_id},   {"revision", &revision},
      {"dtype", &dtype},   {"kv_layout", &kv_layout},
  };
  for (const auto& [field, value] : strings) {
    if (absl::Status s = ValidateString(field, *value); !s.ok()) return s;
  }
  if (model_id.empty()) return absl::InvalidArgumentError("namespace.model_id is empty");
  if (chunk_tokens == 0) return absl::InvalidArgumentError("namespace.chunk_tokens must be > 0");
  if (tp_size == 0) return absl::InvalidArgumentError("namespace.tp_size must be >= 1");
  if (tp_rank >= tp_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "namespace.tp_rank (", tp_rank, ") must be < namespace.tp_size (", tp_size, ")"));
  }
  if (!IsKnownAlgo(hash_algo)) {
    return absl::InvalidArgumentError(
        absl::StrCat("namespace.hash_algo ", static_cast<uint32_t>(hash_algo), " is unknown"));
  }
  return absl::OkStatus();
}

// "kvstash.ns.v1" (13 bytes, unprefixed), then five u32-LE-length-prefixed strings and seven
// u32 LE integers in declaration order. A new field means a new magic ("kvstash.ns.v2").
std::string Namespace::CanonicalEncoding() const {
  std::string out(kNamespaceMagic);
  for (const std::string* s : {&tenant, &model_id, &revision, &dtype, &kv_layout}) {
    AppendString(*s, &out);
  }
  for (uint32_t v : {num_layers, kv_heads, head_dim, tp_rank, tp_size, chunk_tokens,
                     static_cast<uint32_t>(hash_algo)}) {
    AppendU32(v, &out);
  }
  return out;
}

Key128 Namespace::Id() const { return HashBytes(hash_algo, CanonicalEncoding()); }

KeyChain::KeyChain(const Namespace& ns) : KeyChain(ns.Id(), ns.hash_algo, ns.chunk_tokens) {}

KeyChain::KeyChain(const Key128& namespace_id, HashAlgo algo, uint32_t chunk_tokens)
    : ns_id_(namespace_id), algo_(algo), chunk_tokens_(chunk_tokens) {
  if (!IsKnownAlgo(algo)) Die("KeyChain: unknown HashAlgo");
  if (chunk_tokens == 0) Die("KeyChain: chunk_tokens must be > 0");
}

Key128 KeyChain::Root() const {
  Hasher h(algo_);
  h.Update(kRootDomain);
  h.Update(ns_id_);
  return h.Finish();
}

Key128 KeyChain::Next(const Key128& prev, absl::Span<const int32_t> tokens,
                      absl::string_view extra) const {
  Hasher h(algo_);
  return ChainStep(h, prev, tokens, extra);
}

std::vector<Key128> KeyChain::PrefixKeys(absl::Span<const int32_t> tokens,
                                         absl::string_view extra) const {
  const size_t n = tokens.size() / chunk_tokens_;
  std::vector<Key128> keys;
  keys.reserve(n);
  Hasher h(algo_);  // one state for the whole chain: no per-chunk allocation
  Key128 prev = Root();
  for (size_t i = 0; i < n; ++i) {
    prev = ChainStep(h, prev, tokens.subspan(i * chunk_tokens_, chunk_tokens_), extra);
    keys.push_back(prev);
  }
  return keys;
}

Key128 KeyChain::PositionIndependentKey(absl::Span<const int32_t> tokens) const {
  Hasher h(algo_);
  h.Update(kChunkDomain);
  h.Update(ns_id_);
  h.UpdateTokens(tokens);
  return h.Finish();
}

Key128 KeyChain::FromEngineHash(absl::string_view engine_hash) const {
  Hasher h(algo_);
  h.Update(kExtDomain);
  h.Update(ns_id_);
  h.Update(engine_hash);
  return h.Finish();
}

Key128 KeyChain::Hash(absl::string_view data) const { return HashBytes(algo_, data); }

Key128 EngineHashKey(absl::string_view engine_hash) {
  Hasher h(HashAlgo::kXxh3_128);
  h.Update(kEngineDomain);
  h.Update(engine_hash);
  return h.Finish();
}

}  // namespace kvstash
