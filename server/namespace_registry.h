// NamespaceRegistry: the namespaces clients registered, by id. Every data call names a
// namespace id; an id that was never registered is refused, so a client cannot store
// chunks whose meaning (model, dtype, layout) the daemon cannot report.
//
// Thread-safety: thread-safe. Lookups take a reader lock; registration a writer lock.
#pragma once

#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/namespace_spec.h"

namespace kvstash::server {

// Every field is taken as sent (hash_algo 0 reads as XXH3-128), so the id matches what the
// client computes.
using wire::NamespaceFromProto;
using wire::NamespaceToProto;

// A 16-byte namespace id from the wire. INVALID_ARGUMENT when empty or of another length.
absl::StatusOr<Key128> ParseNamespaceId(absl::string_view bytes);

class NamespaceRegistry {
 public:
  // Validates `spec` and records it. Registering the same namespace again is fine and
  // returns the same id. INVALID_ARGUMENT names the bad field.
  absl::StatusOr<Key128> Register(const v1::NamespaceSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);

  // OK when `id` is registered, else FAILED_PRECONDITION
  // "unknown namespace <hex>; call RegisterNamespace first".
  absl::Status Check(const Key128& id) const ABSL_LOCKS_EXCLUDED(mu_);
  // Parses a wire id and checks it is registered.
  absl::StatusOr<Key128> Resolve(absl::string_view id_bytes) const ABSL_LOCKS_EXCLUDED(mu_);
  // As above, and sets `*chunk_tokens` to the namespace's chunk_tokens (one lock, as above).
  absl::StatusOr<Key128> Resolve(absl::string_view id_bytes, uint32_t* chunk_tokens) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // As above, and sets `*tenant` to the spec's tenant (empty when it names none), which
  // the caller's rights are checked against.
  absl::StatusOr<Key128> Resolve(absl::string_view id_bytes, uint32_t* chunk_tokens,
                                 std::string* tenant) const ABSL_LOCKS_EXCLUDED(mu_);

  // The registered spec of `id`, or NOT_FOUND.
  absl::StatusOr<v1::NamespaceSpec> Find(const Key128& id) const ABSL_LOCKS_EXCLUDED(mu_);
  // Every registered namespace, in no particular order.
  std::vector<std::pair<Key128, v1::NamespaceSpec>> All() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key128, v1::NamespaceSpec> specs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::server
