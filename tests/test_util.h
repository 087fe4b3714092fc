// Helpers shared by the integration tests: namespaces, keys, payloads whose bytes are a
// function of their key (so any reader can verify any chunk without shared state), a raw
// gRPC stub for wire-level tests, and bounded polling.
//
// Thread-safety: free functions are thread-safe; Payload is a plain value.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.grpc.pb.h"

namespace kvstash::testing {

inline constexpr size_t kKiB = size_t{1} << 10;
inline constexpr size_t kMiB = size_t{1} << 20;

// A valid namespace whose id differs for every distinct `model_id`, so each test sees its
// own counters.
Namespace TestNamespace(const std::string& model_id, uint32_t chunk_tokens = 16);

Key128 RandomKey(std::mt19937_64& rng);

// Deterministic bytes derived from (key, offset): the same key always yields the same
// content, so a chunk can be verified from its key and size alone.
void FillPattern(const Key128& key, uint8_t* data, size_t size);
std::vector<uint8_t> PatternBytes(const Key128& key, size_t size);
// Index of the first byte that differs from the pattern, or -1 when all match.
int64_t FirstPatternMismatch(const Key128& key, const uint8_t* data, size_t size);

// Random (non-pattern) bytes.
std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t size);

// A chunk to put: key, payload and metadata.
struct Payload {
  Key128 key{};
  std::vector<uint8_t> bytes;
  uint32_t tokens = 0;
  uint32_t format = 0;

  PutItem AsPutItem() const;
};

// Puts `payloads` in one call; returns the call status or the first per-item error.
absl::Status PutAll(Client& client, NamespaceHandle ns, const std::vector<Payload>& payloads);
// Puts `count` fresh pattern chunks of `size` bytes (random keys), `batch` per call, and
// returns their keys. A failed call fails the test and stops early.
std::vector<Key128> PutFresh(Client& client, NamespaceHandle ns, std::mt19937_64& rng, int count,
                             size_t size, int batch);
// Gets `key` into a fresh buffer of `capacity` bytes. The item's own status is returned
// in item->status; the call status is the return value.
absl::Status GetOne(Client& client, NamespaceHandle ns, const Key128& key, size_t capacity,
                    std::vector<uint8_t>* out, GetItem* item);
// Gets `keys` in one call into `capacity`-byte buffers (`bufs`, one per key).
absl::Status GetMany(Client& client, NamespaceHandle ns, const std::vector<Key128>& keys,
                     size_t capacity, std::vector<std::vector<uint8_t>>* bufs,
                     std::vector<GetItem>* items, uint64_t lease_id = 0);

// Connects a client to `uri`; deadlines generous enough for sanitizer builds.
absl::StatusOr<std::unique_ptr<Client>> ConnectClient(const std::string& uri,
                                                      ClientOptions options = {});

// A raw generated stub to the daemon at "host:port" with no client-side message limits.
std::unique_ptr<v1::KvStash::Stub> RawStub(const std::string& address);
// Registers `spec` through `stub`; returns the 16-byte namespace id.
absl::StatusOr<std::string> RawRegister(v1::KvStash::Stub& stub, const Namespace& spec);

// Calls `done` every `interval` until it returns true or `timeout` passes; returns its last
// answer. A bounded wait for asynchronous effects, never a timing assertion.
bool PollUntil(const std::function<bool()>& done, absl::Duration timeout,
               absl::Duration interval = absl::Milliseconds(20));

// Runs `fn` on a thread of its own and waits up to `timeout` for it. A call that does not
// return in time yields DEADLINE_EXCEEDED and its thread is abandoned (detached), so a
// hanging call fails the test instead of hanging the suite. Everything `fn` touches must
// then stay alive: capture shared_ptrs, or deliberately leak what it uses.
absl::Status RunWithTimeout(std::function<absl::Status()> fn, absl::Duration timeout);

// Writes the test certificates of tests/tls_certs.sh into `dir` (its header lists them).
// INTERNAL with the script's output when it fails.
absl::Status MakeTestCertificates(const std::string& dir);

// Whether this build runs under AddressSanitizer (everything is slower and bigger).
constexpr bool kUnderAsan =
#if defined(__SANITIZE_ADDRESS__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

// Whether this build runs under ThreadSanitizer (5-15x slower, shadow memory in the RSS).
constexpr bool kUnderTsan =
#if defined(__SANITIZE_THREAD__)
    true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

}  // namespace kvstash::testing
