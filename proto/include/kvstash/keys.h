// Namespaces and chunk keys: the byte-exact contract between engines, clients and
// kvstashd. docs/keys.md specifies every byte; keys_test.cc pins test vectors so keys never
// change silently between versions.
//
// Thread-safety: Namespace is a plain value. KeyChain is immutable after construction and
// safe to use from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace kvstash {

// The tenant of a namespace whose spec names none; its chunks count against this tenant's
// quotas.
inline constexpr absl::string_view kDefaultTenant = "default";

// A 128-bit namespace id or chunk key, in the byte order documented in docs/keys.md.
using Key128 = std::array<uint8_t, 16>;

std::string KeyToHex(const Key128& key);
// The key's 16 bytes as a string: its form in wire messages.
std::string KeyToBytes(const Key128& key);
absl::StatusOr<Key128> KeyFromHex(absl::string_view hex);

enum class HashAlgo : uint32_t {
  kXxh3_128 = 1,    // fast; for trusted deployments
  kSha256_128 = 2,  // SHA-256 truncated to 16 bytes; for untrusted multi-tenant use
};

// What a chunk's bytes mean. Two engines share chunks iff their namespaces are equal.
struct Namespace {
  std::string tenant = std::string(kDefaultTenant);
  std::string model_id;  // REQUIRED, e.g. "meta-llama/Meta-Llama-3-8B"
  std::string revision;  // model revision or weights hash; may be empty
  std::string dtype = "fp16";
  std::string kv_layout = "kvstash.layer_kv_token.v1";
  uint32_t num_layers = 0;
  uint32_t kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t tp_rank = 0;
  uint32_t tp_size = 1;
  uint32_t chunk_tokens = 256;  // tokens per chunk; REQUIRED > 0
  HashAlgo hash_algo = HashAlgo::kXxh3_128;

  // Checks required fields and ranges (tp_rank < tp_size, known hash_algo, string lengths).
  absl::Status Validate() const;
  // The canonical byte encoding (docs/keys.md). REQUIRES: Validate().ok().
  std::string CanonicalEncoding() const;
  // hash_algo over CanonicalEncoding(). REQUIRES: Validate().ok().
  Key128 Id() const;
};

// Derives chunk keys from token ids for one namespace (docs/keys.md has every byte):
//   h_0 = H("kvstash.root" || ns_id)
//   h_i = H(h_{i-1} || u32le(n) || n tokens of chunk i as int32 LE || u32le(len) || extra)
// so h_i names the whole prefix up to and including chunk i.
class KeyChain {
 public:
  // REQUIRES: ns.Validate().ok().
  explicit KeyChain(const Namespace& ns);
  // REQUIRES: algo is a known HashAlgo and chunk_tokens > 0 (checked; aborts otherwise).
  KeyChain(const Key128& namespace_id, HashAlgo algo, uint32_t chunk_tokens);

  const Key128& namespace_id() const { return ns_id_; }
  uint32_t chunk_tokens() const { return chunk_tokens_; }

  // h_0 of the chain.
  Key128 Root() const;
  // One step of the chain. `tokens` may be of any length (the caller decides chunking).
  Key128 Next(const Key128& prev, absl::Span<const int32_t> tokens,
              absl::string_view extra = {}) const;
  // Keys of every full chunk of `tokens`, in order; a partial last chunk gets no key.
  // `extra` (e.g. LoRA id, multimodal hash) is mixed into every step.
  std::vector<Key128> PrefixKeys(absl::Span<const int32_t> tokens,
                                 absl::string_view extra = {}) const;
  // Key of a chunk wherever it appears in a prompt (RAG-style reuse):
  //   H("kvstash.chunk" || ns_id || tokens as int32 LE)
  Key128 PositionIndependentKey(absl::Span<const int32_t> tokens) const;
  // Adopts an engine's own block hash (vLLM sha256_cbor, SGLang page hash) given as its
  // raw digest bytes, not hex:
  //   H("kvstash.ext" || ns_id || engine_hash)
  Key128 FromEngineHash(absl::string_view engine_hash) const;

 private:
  Key128 Hash(absl::string_view data) const;

  Key128 ns_id_;
  HashAlgo algo_;
  uint32_t chunk_tokens_;
};

// An engine's block hash as a key of no particular namespace, for callers that name the
// namespace in every call anyway (the daemon indexes chunks by namespace and key):
//   XXH3-128("kvstash.engine" || engine_hash)
// KeyChain::FromEngineHash is the form bound to one namespace (and its hash_algo).
Key128 EngineHashKey(absl::string_view engine_hash);

}  // namespace kvstash
